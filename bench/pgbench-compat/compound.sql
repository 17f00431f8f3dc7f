-- \; : two statements sent together
UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1 \; UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = :client_id + 1;
