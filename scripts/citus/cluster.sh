#!/usr/bin/env bash
# A Citus test cluster on this machine: a coordinator and two workers, each its
# own PostgreSQL 15 cluster running as the system user `postgres`, listening on
# 127.0.0.1 only. Citus must be installed first (scripts/citus/build.sh).
#
#   scripts/citus/cluster.sh start    [--dir D]   initdb when needed, start, register the nodes
#   scripts/citus/cluster.sh stop     [--dir D]   stop all three
#   scripts/citus/cluster.sh status   [--dir D]   running or not, and the coordinator's node list
#   scripts/citus/cluster.sh url      [DB]        the coordinator's postgres:// URL (database DB, default postgres)
#   scripts/citus/cluster.sh createdb NAME        a database on all three nodes, citus in it, nodes registered
#   scripts/citus/cluster.sh dropdb   NAME        drops it on all three nodes
#   scripts/citus/cluster.sh roles    [DB]        LOGIN for Pressroom's internal roles on the workers only
#                                                 (after the migrations created them; DB: where to connect)
#   scripts/citus/cluster.sh destroy  [--dir D]   stop, then remove the directory
#
# Environment: CITUS_DIR (default /var/tmp/pressroom-citus; --dir wins),
# CITUS_PORT_BASE (default 9700: coordinator 9700, workers 9701 and 9702),
# PG_BIN (default /usr/lib/postgresql/15/bin).
#
# A test cluster: fsync, synchronous_commit and full_page_writes are off; a
# crash of the machine may lose or corrupt it (`destroy`, then `start`).
set -euo pipefail

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
DIR="${CITUS_DIR:-/var/tmp/pressroom-citus}"
PORT_BASE="${CITUS_PORT_BASE:-9700}"
HOST=127.0.0.1
PG_USER=postgres
NODES=(coordinator worker1 worker2)

die() { echo "citus cluster: $*" >&2; exit 1; }

cmd="${1:-}"
[[ -n "$cmd" ]] && shift
args=()
while (($#)); do
  case "$1" in
    --dir) [[ $# -ge 2 ]] || die "--dir needs a directory"; DIR="$2"; shift 2 ;;
    --dir=*) DIR="${1#--dir=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ "$DIR" = /* ]] || DIR="$PWD/$DIR"

port_of() { # node index -> port
  echo $((PORT_BASE + $1))
}

# Pressroom's internal roles: NOLOGIN, as the migrations create them, but
# Citus opens its connections to the workers as the current role, so they may
# log in to the workers (`roles`), and only from the coordinator (hba_lines).
INTERNAL_ROLES=(pressroom_api pressroom_request pressroom_definer pressroom_worker)
# The address the coordinator's connections to the workers come from.
COORDINATOR_ADDR="$HOST/32"

# pg_hba.conf of node $1, rewritten at each `start` (then reloaded) and by
# `roles`. Trust from 127.0.0.1 for every role and database: a test cluster.
# On a worker the internal roles come in over TCP from the coordinator's
# address only; the local socket and every other address refuse them. (Here
# every node is on 127.0.0.1, so the rule is the shape of the real one: on
# separate machines COORDINATOR_ADDR is the coordinator's address.)
hba_lines() {
  local name="$1" roles
  roles="$(IFS=,; echo "${INTERNAL_ROLES[*]}")"
  echo "# TYPE  DATABASE  USER  ADDRESS        METHOD"
  if [[ "$name" != coordinator ]]; then
    cat <<EOF
local   all       $roles   reject
host    all       $roles   $COORDINATOR_ADDR   trust
host    all       $roles   all   reject
EOF
  fi
  cat <<'EOF'
local   all       all                  trust
host    all       all   127.0.0.1/32   trust
EOF
}

# Settings of every node (written to pressroom-citus.conf, included from
# postgresql.conf); $1 is the node's name, $2 its port.
node_conf() {
  local name="$1" port="$2" max_conn
  # Two cores: the coordinator takes the clients; each worker also takes the
  # coordinator's connections to it (at most citus.max_shared_pool_size) and
  # the other nodes' (metadata sync, maintenance).
  if [[ "$name" == coordinator ]]; then max_conn=200; else max_conn=300; fi
  cat <<EOF
# Written by scripts/citus/cluster.sh at each start; edits are overwritten.
listen_addresses = '$HOST'
port = $port
unix_socket_directories = '$DIR/$name'
max_connections = $max_conn
shared_preload_libraries = 'citus'
shared_buffers = 128MB
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = logical
max_wal_size = 1GB
# Nodes talk to each other over 127.0.0.1 without TLS.
citus.node_conninfo = 'sslmode=disable'
# Connections the coordinator keeps open to each worker, all sessions together.
citus.max_shared_pool_size = 150
log_min_messages = warning
log_line_prefix = '%m [%p] %q%u@%d '
EOF
}

as_pg() { # run a command as the postgres system user
  if [[ "$(id -un)" == "$PG_USER" ]]; then "$@"; else runuser -u "$PG_USER" -- "$@"; fi
}

psql_node() { # port database sql...
  local port="$1" db="$2"; shift 2
  PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$port" -U "$PG_USER" -d "$db" -At "$@"
}

running() { # node index -> 0 when its postmaster runs
  local name="${NODES[$1]}"
  [[ -f "$DIR/$name/PG_VERSION" ]] && as_pg "$PG_BIN/pg_ctl" -D "$DIR/$name" status >/dev/null 2>&1
}

ensure_dir() {
  [[ -x "$PG_BIN/initdb" ]] || die "$PG_BIN/initdb not found (PostgreSQL 15; set PG_BIN)"
  [[ -f "$("$PG_BIN/pg_config" --pkglibdir)/citus.so" ]] || die "citus is not installed: run scripts/citus/build.sh first"
  if [[ ! -d "$DIR" ]]; then
    mkdir -p "$DIR"
  fi
  if [[ "$(stat -c %U "$DIR")" != "$PG_USER" ]]; then
    [[ "$(id -u)" -eq 0 ]] || die "$DIR must be owned by $PG_USER (run as root once)"
    chown "$PG_USER": "$DIR"
  fi
  chmod 0700 "$DIR"
}

init_node() { # node index
  local i="$1" name="${NODES[$1]}" data="$DIR/${NODES[$1]}"
  if [[ ! -f "$data/PG_VERSION" ]]; then
    echo "citus cluster: initdb $name ($data)"
    as_pg "$PG_BIN/initdb" -D "$data" -U "$PG_USER" -E UTF8 --locale=C.UTF-8 \
      --auth-local=trust --auth-host=trust >"$DIR/$name.initdb.log" 2>&1 ||
      { cat "$DIR/$name.initdb.log" >&2; die "initdb of $name failed"; }
    echo "include_if_exists = 'pressroom-citus.conf'" | as_pg tee -a "$data/postgresql.conf" >/dev/null
  fi
  node_conf "$name" "$(port_of "$i")" | as_pg tee "$data/pressroom-citus.conf" >/dev/null
  hba_lines "$name" | as_pg tee "$data/pg_hba.conf" >/dev/null
}

start_node() { # node index
  local i="$1" name="${NODES[$1]}"
  if running "$i"; then
    as_pg "$PG_BIN/pg_ctl" -D "$DIR/$name" reload >/dev/null
    return
  fi
  echo "citus cluster: starting $name on $HOST:$(port_of "$i")"
  as_pg "$PG_BIN/pg_ctl" -D "$DIR/$name" -l "$DIR/$name.log" -w -t 60 start >/dev/null ||
    { tail -n 20 "$DIR/$name.log" >&2; die "$name did not start (log: $DIR/$name.log)"; }
}

# Citus in database $1 on every node, the coordinator registered and the two
# workers added (each step skipped when already done).
setup_database() {
  local db="$1" i
  for i in 0 1 2; do
    psql_node "$(port_of "$i")" "$db" -c "create extension if not exists citus"
  done
  local c; c="$(port_of 0)"
  psql_node "$c" "$db" -c "select citus_set_coordinator_host('$HOST', $c)" >/dev/null
  for i in 1 2; do
    local p; p="$(port_of "$i")"
    if [[ "$(psql_node "$c" "$db" -c "select count(*) from pg_dist_node where nodename = '$HOST' and nodeport = $p")" == 0 ]]; then
      psql_node "$c" "$db" -c "select citus_add_node('$HOST', $p)" >/dev/null
    fi
  done
}

valid_db_name() {
  [[ "$1" =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || die "database name must match [a-z_][a-z0-9_]*: $1"
}

all_running() {
  local i
  for i in 0 1 2; do running "$i" || die "${NODES[$i]} is not running (scripts/citus/cluster.sh start)"; done
}

case "$cmd" in
  start)
    ensure_dir
    for i in 0 1 2; do init_node "$i"; done
    for i in 0 1 2; do start_node "$i"; done
    setup_database postgres
    echo "citus cluster: up; coordinator postgres://$PG_USER@$HOST:$(port_of 0)/postgres"
    ;;
  stop)
    for i in 2 1 0; do
      if running "$i"; then
        echo "citus cluster: stopping ${NODES[$i]}"
        as_pg "$PG_BIN/pg_ctl" -D "$DIR/${NODES[$i]}" -m fast -w stop >/dev/null
      fi
    done
    ;;
  status)
    rc=0
    for i in 0 1 2; do
      if running "$i"; then state=running; else state=stopped; rc=3; fi
      printf '%-12s %s:%s %s (%s)\n' "${NODES[$i]}" "$HOST" "$(port_of "$i")" "$state" "$DIR/${NODES[$i]}"
    done
    if running 0; then
      echo "nodes registered in database postgres:"
      psql_node "$(port_of 0)" postgres -F ' ' -c \
        "select '  ' || nodename || ':' || nodeport, noderole, case when groupid = 0 then 'coordinator' else 'worker' end, case when isactive then 'active' else 'inactive' end from pg_dist_node order by nodeid" || rc=1
    fi
    exit "$rc"
    ;;
  url)
    db="${args[0]:-postgres}"
    valid_db_name "$db"
    echo "postgres://$PG_USER@$HOST:$(port_of 0)/$db"
    ;;
  createdb)
    db="${args[0]:-}"
    [[ -n "$db" ]] || die "usage: $0 createdb NAME"
    valid_db_name "$db"
    all_running
    for i in 0 1 2; do
      p="$(port_of "$i")"
      if [[ "$(psql_node "$p" postgres -c "select count(*) from pg_database where datname = '$db'")" == 0 ]]; then
        psql_node "$p" postgres -c "create database $db"
      fi
    done
    setup_database "$db"
    echo "postgres://$PG_USER@$HOST:$(port_of 0)/$db"
    ;;
  dropdb)
    db="${args[0]:-}"
    [[ -n "$db" ]] || die "usage: $0 dropdb NAME"
    valid_db_name "$db"
    [[ "$db" != postgres ]] || die "will not drop database postgres"
    all_running
    for i in 0 1 2; do
      psql_node "$(port_of "$i")" postgres -c "drop database if exists $db with (force)"
    done
    ;;
  roles)
    # LOGIN on each worker, with citus.enable_alter_role_propagation off: a
    # plain ALTER ROLE on a worker propagates to every node, the coordinator
    # included (docs/citus.md). The coordinator keeps them NOLOGIN.
    db="${args[0]:-postgres}"
    valid_db_name "$db"
    all_running
    c="$(port_of 0)"
    role_list="$(printf "'%s'," "${INTERNAL_ROLES[@]}")"; role_list="${role_list%,}"
    for i in 0 1 2; do
      p="$(port_of "$i")"
      have="$(psql_node "$p" "$db" -c "select count(*) from pg_roles where rolname in ($role_list)")"
      [[ "$have" == "${#INTERNAL_ROLES[@]}" ]] ||
        die "${NODES[$i]}: $have of the ${#INTERNAL_ROLES[@]} internal roles exist; run the migrations on the coordinator first"
    done
    for i in 1 2; do
      p="$(port_of "$i")"
      hba_lines "${NODES[$i]}" | as_pg tee "$DIR/${NODES[$i]}/pg_hba.conf" >/dev/null
      as_pg "$PG_BIN/pg_ctl" -D "$DIR/${NODES[$i]}" reload >/dev/null
      for r in "${INTERNAL_ROLES[@]}"; do
        psql_node "$p" "$db" -c "set citus.enable_alter_role_propagation = off" -c "alter role $r login"
      done
      echo "citus cluster: ${NODES[$i]}: ${INTERNAL_ROLES[*]} may log in (from $COORDINATOR_ADDR)"
    done
    if [[ "$(psql_node "$c" "$db" -c "select count(*) from pg_roles where rolname in ($role_list) and rolcanlogin")" != 0 ]]; then
      die "the coordinator lets an internal role log in; it must not (alter role ... nologin there)"
    fi
    ;;
  destroy)
    "$0" stop --dir "$DIR"
    if [[ -d "$DIR" ]]; then
      echo "citus cluster: removing $DIR"
      rm -rf -- "$DIR"
    fi
    ;;
  *)
    sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
    [[ -z "$cmd" || "$cmd" == help || "$cmd" == -h || "$cmd" == --help ]] && exit 0
    exit 2
    ;;
esac
