# Sourced by the GPU machine's suites (bench/fleet.sh, bench/load.sh): a
# PostgreSQL server from .fleet/pg.tar.xz (Debian's server binaries and
# their libraries, unpacked as .pgroot; docs/development.md), run as an
# unprivileged user on a Unix socket under $pg, fsync off (a benchmark's
# database, not a durable one).
#   pg_setup LOG     unpack, initdb and start (a fresh cluster)
#   pg_start         start the cluster again (a later call: /var/tmp stays)
#   pg_url NAME      the connection URL of database NAME
#   pgenv CMD...     CMD with the server's libraries
# PG_CPUS (a CPU list, optional): the server and its backends run only there.
pg=${FLEET_PG:-/var/tmp/tuned-fleet-pg}  # outside the work tree: the server's user must reach it
pgbin=$pg/.pgroot/usr/lib/postgresql/15/bin
pgenv() { LD_LIBRARY_PATH=$pg/.pgroot/lib "$@"; }
pg_url() { echo "postgresql://postgres@/$1?host=$pg/sock&port=5432"; }
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u pgfleet -- "$@"; else "$@"; fi; }
pg_start() {
  # shellcheck disable=SC2086  # ${PG_CPUS:+...}: the taskset words or none
  as_pg ${PG_CPUS:+taskset -c $PG_CPUS} env LD_LIBRARY_PATH=$pg/.pgroot/lib "$pgbin/pg_ctl" -D "$pg/data" -l "$pg/server.log" -w \
    -o "-k $pg/sock -p 5432 -c listen_addresses='' -c max_connections=300 -c fsync=off" start ||
    { cat "$pg/server.log"; return 1; }
}
pg_setup() {
  if [[ $(id -u) -eq 0 ]]; then id pgfleet > /dev/null 2>&1 || useradd -M -r pgfleet; fi
  rm -rf "$pg" && mkdir -p "$pg/sock" && tar xJf "$PWD/.fleet/pg.tar.xz" -C "$pg" || return 1
  [[ $(id -u) -eq 0 ]] && chown -R pgfleet "$pg"
  as_pg env LD_LIBRARY_PATH=$pg/.pgroot/lib "$pgbin/initdb" -D "$pg/data" -A trust -U postgres \
    --no-sync > "$1" 2>&1 || { cat "$1"; return 1; }
  pg_start
}
