-- -M simple, pgbench's default: values are written into the text. `:a + :b` becomes `11 + 3`, typed
-- by its literals (prepared, the server cannot tell which + is meant), and a variable holding text is
-- written unquoted: `:col` holding abalance names the column
\set aid :client_id + 1
\set a 10 + :client_id
\set b 3
SELECT 'abalance' AS col \gset
UPDATE pgbench_accounts SET abalance = :col + (SELECT :a + :b) WHERE aid = :aid;
