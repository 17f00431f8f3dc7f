# Sourced by the service scripts: retry_for TRIES COMMAND… runs COMMAND (quietly) every 0.2 s until it
# succeeds (status 0) or TRIES attempts have failed (status 1).
retry_for() {
  local tries=$1
  shift
  for _ in $(seq "$tries"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  return 1
}
