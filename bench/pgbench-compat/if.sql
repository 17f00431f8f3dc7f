-- \if / \elif / \else / \endif: each client adds its own amount to its own account
\set aid :client_id + 1
\if :client_id % 2 = 0
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
\elif :client_id = 1
UPDATE pgbench_accounts SET abalance = abalance + 10 WHERE aid = :aid;
\else
  \if :client_id > 2
UPDATE pgbench_accounts SET abalance = abalance + 100 WHERE aid = :aid;
  \endif
\endif
