-- \gset: read a balance, write it back plus one (each client its own account)
\set aid :client_id + 1
SELECT abalance AS bal FROM pgbench_accounts WHERE aid = :aid \gset
UPDATE pgbench_accounts SET abalance = :bal + 1 WHERE aid = :aid;
