#!/usr/bin/env bash
# PostgreSQL 15 + pgvector for the PgvectorHistoryStore integration tests (run as root).
#
# Idempotent and fast when everything is already there (~1 s):
#   1. PostgreSQL 15 installed (Debian bookworm package) and its cluster up on 127.0.0.1:5432;
#   2. pgvector built from Debian trixie's source (bookworm has no package; 0.8 builds against
#      the PG 15 headers in ~4 s) and installed, unless the server already offers `vector`;
#   3. a login role and a test database with the extension, plus one without it (for the
#      missing-extension test).
# The build (and the trixie source index it needs) stays under ~/.cache, never in the repository.
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
PG_PORT=${PG_PORT:-5432}
TEST_ROLE=${SCHEDMATE_TEST_PG_ROLE:-schedmate}
TEST_PASSWORD=${SCHEDMATE_TEST_PG_PASSWORD:-schedmate}
TEST_DB=${SCHEDMATE_TEST_PG_DB:-schedmate_test}
NOEXT_DB=${TEST_DB}_noext
BUILD_ROOT=${PGVECTOR_BUILD_DIR:-$HOME/.cache/schedmate/pgvector-build}
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
PG_CONFIG=$PG_BIN/pg_config

log() { echo "provision_pgvector: $*"; }
die() { echo "provision_pgvector: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (installs packages and starts the server)"
export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_update() { [ "$apt_updated" = 1 ] || { apt-get update -qq; apt_updated=1; }; }

# 1. server ---------------------------------------------------------------------------------------
if [ ! -x "$PG_BIN/postgres" ]; then
    log "installing postgresql-$PG_MAJOR"
    apt_update
    apt-get install -y -qq --no-install-recommends "postgresql-$PG_MAJOR" >/dev/null
fi
if ! "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; then
    if ! pg_lsclusters -h 2>/dev/null | awk -v v="$PG_MAJOR" '$1==v && $2=="main"' | grep -q .; then
        log "creating cluster $PG_MAJOR/main"
        pg_createcluster "$PG_MAJOR" main --port "$PG_PORT" >/dev/null
    fi
    log "starting cluster $PG_MAJOR/main"
    pg_ctlcluster "$PG_MAJOR" main start
    for _ in $(seq 1 50); do
        "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
        sleep 0.2
    done
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || die "PostgreSQL is not accepting connections on 127.0.0.1:$PG_PORT"
fi

# 2. pgvector -------------------------------------------------------------------------------------
psql_admin() { runuser -u postgres -- "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" "$@"; }

have_vector() {
    [ -f "$("$PG_CONFIG" --sharedir)/extension/vector.control" ] && [ -f "$("$PG_CONFIG" --pkglibdir)/vector.so" ]
}

if ! have_vector; then
    log "building pgvector from Debian trixie's source"
    if [ ! -x "$PG_CONFIG" ] || [ ! -f "$("$PG_CONFIG" --includedir-server)/postgres.h" ]; then
        apt_update
        apt-get install -y -qq --no-install-recommends "postgresql-server-dev-$PG_MAJOR" build-essential dpkg-dev >/dev/null
    fi
    # trixie's source index in a private apt configuration under $BUILD_ROOT: the machine's own
    # apt sources are left alone
    rm -rf "$BUILD_ROOT" && mkdir -p "$BUILD_ROOT/lists/partial"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
        > "$BUILD_ROOT/trixie-src.list"
    apt_src=(-o Dir::Etc::SourceList="$BUILD_ROOT/trixie-src.list" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State::Lists="$BUILD_ROOT/lists" -o APT::Sandbox::User=root)
    apt-get "${apt_src[@]}" update -qq
    (cd "$BUILD_ROOT" && apt-get "${apt_src[@]}" source -qq --download-only pgvector >/dev/null)
    (cd "$BUILD_ROOT" && dpkg-source -x --no-check ./pgvector_*.dsc src >/dev/null)
    make -s -C "$BUILD_ROOT/src" PG_CONFIG="$PG_CONFIG" -j"$(nproc)" >/dev/null
    make -s -C "$BUILD_ROOT/src" PG_CONFIG="$PG_CONFIG" install >/dev/null
    have_vector || die "pgvector built but vector.control / vector.so are not where $PG_CONFIG says"
    log "pgvector $(grep default_version "$("$PG_CONFIG" --sharedir)/extension/vector.control" | tr -dc '0-9.') installed"
fi

# 3. role and databases ---------------------------------------------------------------------------
psql_admin -d postgres <<SQL
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', '$TEST_ROLE', '$TEST_PASSWORD')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$TEST_ROLE') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', '$TEST_DB', '$TEST_ROLE')
 WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$TEST_DB') \gexec
SELECT format('CREATE DATABASE %I', '$NOEXT_DB')
 WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$NOEXT_DB') \gexec
SQL
psql_admin -d "$TEST_DB" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS vector" -c "ALTER EXTENSION vector UPDATE"
psql_admin -d "$NOEXT_DB" -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS vector"
log "ready: postgresql://$TEST_ROLE@127.0.0.1:$PG_PORT/$TEST_DB (vector $(psql_admin -d "$TEST_DB" -Atc "SELECT extversion FROM pg_extension WHERE extname='vector'"))"
