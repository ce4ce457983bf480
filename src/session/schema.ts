/**
 * The store's schema as an ordered list of migrations. `PRAGMA user_version`
 * records how many have run; a later issue adds a table by appending one
 * entry, never by editing an old one (users' databases already ran it).
 */

import { LEDGER_SPEND_MIGRATION, PICO_SPEND_MIGRATION, SESSION_SPEND_MIGRATION } from "../budget/ledger-spend.ts";
import { COMPACTION_MIGRATION } from "./compactions.ts";
import { FIGURES_MIGRATION } from "./ledger-figures.ts";
import { MESSAGE_PARTS_MIGRATION } from "./message-parts.ts";

/** Migrations in order; index i brings the store from user_version i to i + 1. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    name         TEXT UNIQUE,
    model        TEXT NOT NULL,
    parent_id    TEXT REFERENCES sessions(id),
    fork_point   TEXT,
    affinity_key TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    -- bumped by every write to what loadSession returns, so a process can reuse what it already loaded
    rev          INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX sessions_parent ON sessions(parent_id);
  CREATE INDEX sessions_updated ON sessions(updated_at);

  CREATE TABLE prefixes (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    prefix      TEXT NOT NULL,
    reason      TEXT,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, version)
  ) WITHOUT ROWID;

  -- One row per message node; its blocks are the content JSON, stored as written.
  CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    id         TEXT NOT NULL,
    role       TEXT NOT NULL,
    content    TEXT NOT NULL,
    incomplete INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, id)
  ) WITHOUT ROWID;

  CREATE TABLE summaries (
    session_id     TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    messages       TEXT NOT NULL,
    covers_through TEXT
  ) WITHOUT ROWID;

  CREATE TABLE requests (
    id                  TEXT PRIMARY KEY,
    session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    prefix_version      INTEGER NOT NULL,
    role                TEXT NOT NULL,
    provider            TEXT NOT NULL,
    model               TEXT NOT NULL,
    protocol            TEXT NOT NULL,
    started_at          INTEGER NOT NULL,
    first_token_at      INTEGER,
    finished_at         INTEGER,
    latency_ms          REAL,
    ttft_ms             REAL,
    output_tps          REAL,
    input               INTEGER,
    cache_read          INTEGER,
    cache_write_5m      INTEGER,
    cache_write_1h      INTEGER,
    output              INTEGER,
    reasoning           INTEGER,
    raw_usage           TEXT,
    cost_usd            REAL,
    provider_cost_usd   REAL,
    provider_request_id TEXT,
    affinity_key        TEXT,
    cache_mode          TEXT NOT NULL,
    cache_ttl           TEXT NOT NULL,
    -- the hash chain is stored as a delta: the first chain_shared links of request chain_base, then chain_tail
    chain_base          TEXT,
    chain_shared        INTEGER NOT NULL DEFAULT 0,
    chain_depth         INTEGER NOT NULL DEFAULT 0,
    chain_tail          TEXT NOT NULL,
    expected_cache_read INTEGER,
    status              TEXT NOT NULL,
    error               TEXT,
    message_id          TEXT
  );
  CREATE INDEX requests_session ON requests(session_id, started_at);
  CREATE INDEX requests_started ON requests(started_at);
  CREATE UNIQUE INDEX requests_provider_id ON requests(provider, provider_request_id) WHERE provider_request_id IS NOT NULL;

  CREATE TABLE node_tokens (
    hash   TEXT PRIMARY KEY,
    tokens INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE turn_leases (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    owner_pid  INTEGER NOT NULL,
    host       TEXT NOT NULL,
    token      TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // The cacheable maximum of each request, computed with the provider's cache rules when recorded.
  `ALTER TABLE requests ADD COLUMN cacheable_max INTEGER;`,
  // Budgets (src/budget): one row per provider call, a reservation of its worst-case forecast that is
  // settled to its actual cost after the call. Rows carry no content: runs with --no-store count here too.
  // OTLP export (src/telemetry): the last ledger rowid each destination received.
  `
  ALTER TABLE requests ADD COLUMN finish_reason TEXT;

  CREATE TABLE spend (
    id         TEXT PRIMARY KEY,
    session_id TEXT,
    day        TEXT NOT NULL,
    month      TEXT NOT NULL,
    emulated   INTEGER NOT NULL,
    amount_usd REAL NOT NULL,
    forecast_usd REAL NOT NULL,
    state      TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX spend_day ON spend(emulated, day);
  CREATE INDEX spend_month ON spend(emulated, month);
  CREATE INDEX spend_session ON spend(session_id);

  CREATE TABLE export_watermarks (
    destination   TEXT PRIMARY KEY,
    last_rowid    INTEGER NOT NULL,
    lease_token   TEXT,
    lease_expires INTEGER
  ) WITHOUT ROWID;
  `,
  // Sessions recorded by `cachet proxy` (src/session/recorded.ts): where a session came from, the client, and per exchange what the ledger row does not hold.
  `
  ALTER TABLE sessions ADD COLUMN source TEXT NOT NULL DEFAULT 'own';
  ALTER TABLE sessions ADD COLUMN client TEXT;
  CREATE INDEX sessions_source ON sessions(source, updated_at);
  CREATE TABLE recorded_exchanges (
    request_id          TEXT PRIMARY KEY REFERENCES requests(id) ON DELETE CASCADE,
    http_status         INTEGER,
    path                TEXT NOT NULL,
    client              TEXT,
    session_via         TEXT NOT NULL,
    provider_request_id TEXT,
    request_hash        TEXT NOT NULL,
    response_hash       TEXT,
    request_body        BLOB,
    response_body       BLOB
  ) WITHOUT ROWID;
  `,
  // Per-request figures (exact cost, uncached cost, estimate note) for aggregation in SQL: src/session/ledger-figures.ts.
  FIGURES_MIGRATION,
  // Compaction (src/compaction): one row per compaction of a session, and summaries addressed by content.
  COMPACTION_MIGRATION,
  // Every billed attempt is a ledger row (CASES.md case 30): its attempt number within the turn, and whether its usage
  // is a lower bound (a stream cut after the provider reported part of it, case 44). A provider request id is not a key:
  // local servers and proxies reuse it (case 46), so its index is no longer unique.
  `
  DROP INDEX requests_provider_id;
  CREATE INDEX requests_provider_id ON requests(provider, provider_request_id) WHERE provider_request_id IS NOT NULL;
  ALTER TABLE requests ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE requests ADD COLUMN usage_lower_bound INTEGER NOT NULL DEFAULT 0;
  `,
  // The generation settings that stick to a session (src/run/sticky-generation.ts), JSON; NULL: none stored yet.
  `ALTER TABLE sessions ADD COLUMN generation TEXT;`,
  // A huge message's content JSON in parts, so storing it never holds whole copies of it (src/session/message-parts.ts).
  MESSAGE_PARTS_MIGRATION,
  // How a request was sent: 'full' (the whole request) or 'incremental' (only the new input, continuing the provider's
  // stored previous response: OpenAI Responses previous_response_id); NULL for requests recorded before this column.
  `ALTER TABLE requests ADD COLUMN request_form TEXT;`,
  // A turn settles its session's in-flight rows first: without this index that is a scan of every row of the session.
  `CREATE INDEX requests_in_flight ON requests(session_id) WHERE status = 'in_flight';`,
  // The service tier the provider said it served outside the raw usage (OpenAI's response-level service_tier), which
  // prices the request: `cachet cost --tree` prices its nodes with it. NULL: none said, or recorded before this column.
  `ALTER TABLE requests ADD COLUMN service_tier TEXT;`,
  // Which spend a request counts toward straight from the ledger, so that a spending limit set later counts what was
  // spent before it (src/budget/ledger-spend.ts).
  LEDGER_SPEND_MIGRATION,
  // A session's spend read by its own covering index (src/budget/ledger-spend.ts).
  SESSION_SPEND_MIGRATION,
  // Both spend indexes cover the exact cost in pico-USD, which the budget sums instead of the float cost_usd.
  PICO_SPEND_MIGRATION,
];
