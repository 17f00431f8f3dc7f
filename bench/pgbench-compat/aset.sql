-- \aset: every statement of a compound command stores its row
SELECT 1 AS one \; SELECT 2 AS two \aset
UPDATE pgbench_branches SET bbalance = bbalance + :one + :two WHERE bid = 1;
