#!/bin/sh
# Initialise the cluster on first start (a user and a database for Dagster, password auth), then
# run the server in the foreground on 127.0.0.1:$POSTGRES_PORT (the host network: no bridge).
set -eu
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
: "${POSTGRES_USER:?}" "${POSTGRES_PASSWORD:?}" "${POSTGRES_DB:?}" "${POSTGRES_PORT:=5432}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --no-instructions
  rm -f "$pwfile"
  "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w start
  "$bin/createdb" -h /tmp -U "$POSTGRES_USER" "$POSTGRES_DB"
  "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses=127.0.0.1 -p "$POSTGRES_PORT" -k /tmp
