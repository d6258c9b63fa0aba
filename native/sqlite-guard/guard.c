/*
 * Hostplane's SQLite guard: a loadable extension that the engine loads into every tenant
 * connection right after opening it (src/sqlite/engine/connection.ts). It installs
 *
 *   - an authorizer (allowlists of PRAGMAs and functions in the spirit of Cloudflare workerd's
 *     src/workerd/util/sqlite.c++; only the main database; no ATTACH/DETACH, no temp objects, no
 *     transaction control, no access to the reserved tables `_meta`, `_hp_*`, `_litestream_*`,
 *     no writes to `sqlite_*`, no virtual table module outside FTS5, R*Tree and the JSON and
 *     PRAGMA table-valued functions). SQLite hands the authorizer resolved names, so every spelling
 *     ("_META", [_meta], `_Meta`, main._meta) and every path (views, triggers) arrives as `_meta`;
 *   - `sqlite3_limit` values for tenant SQL (attached databases 0);
 *   - a per-statement deadline, enforced by the progress handler (SQLITE_INTERRUPT when it passes);
 *   - the control function `_hp_guard(secret, op, ...)` through which the engine switches between
 *     its own statements ("engine" mode: trusted, no deadline) and tenant statements ("tenant"
 *     mode: guarded, deadline set). `_hp_guard('init')` hands the random secret out exactly once,
 *     to the engine, before any tenant SQL runs; tenant SQL cannot learn it, so cannot switch;
 *   - the "did this statement insert a row" marker: each switch to tenant mode sets the
 *     connection's last insert rowid to NO_ROWID (the previous value kept aside, and what the
 *     `last_insert_rowid()` SQL function answers meanwhile); the switch back restores it if the
 *     statement inserted nothing. So the engine reads NO_ROWID after a statement that inserted no
 *     row, and tenant SQL sees SQLite's usual value throughout.
 *
 * Extension loading is switched off for the connection (C API and SQL) once the guard is in.
 * The state lives in one struct per connection, freed with the control function (on close).
 */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SECRET_BYTES 32
#define REASON_MAX 160
/* Module names the build registers when a connection opens: this SQLite has about a dozen. */
#define MODULES_MAX 64
/* The last insert rowid while a tenant statement has inserted nothing (INT64_MIN: a rowid only a
   tenant that inserts it explicitly can have). The engine knows it as NO_ROWID too. */
#define NO_ROWID ((sqlite3_int64)(-9223372036854775807LL - 1))
/* The most bytes of one value (and one row) the engine's own statements handle; tenant statements
   get less, per statement (see "tenant"). */
#define ENGINE_LENGTH (8 * 1024 * 1024)

typedef struct Guard {
  sqlite3 *db;
  int engine;            /* 1: the engine's own statements (trusted); 0: tenant SQL */
  int maintenance;       /* 1 while the platform's VACUUM runs: VACUUM's internal ATTACH passes */
  int sealed;            /* the secret has been handed out */
  int64_t deadline_ns;   /* monotonic; 0 = none */
  int timed_out;         /* the progress handler interrupted a statement since the last ask */
  sqlite3_int64 saved_rowid; /* the last insert rowid before the current tenant statement */
  int refused_count;
  char *refused_modules[MODULES_MAX]; /* virtual table modules tenant SQL may not read as tables */
  char secret[SECRET_BYTES * 2 + 1];
  char reason[REASON_MAX]; /* why the authorizer last said no, for the engine's error and metrics */
} Guard;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- names ------------------------------------------------------------------------------ */

static int has_prefix_ci(const char *s, const char *prefix) {
  return s != 0 && strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* Internal tables (the version counter, the user pool, Litestream's bookkeeping). */
static int is_reserved(const char *name) {
  if (name == 0) return 0;
  return strcasecmp(name, "_meta") == 0 || has_prefix_ci(name, "_hp_") ||
         has_prefix_ci(name, "_litestream_");
}

/* ---- allowlists ------------------------------------------------------------------------- */

static const char *const ALLOWED_FUNCTIONS[] = {
    /* core */
    "abs", "changes", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "if",
    "ifnull", "iif", "instr", "last_insert_rowid", "length", "like", "likelihood", "likely",
    "lower", "ltrim", "max_scalar", "min_scalar", "nullif", "octet_length", "printf", "quote",
    "random", "randomblob", "replace", "round", "rtrim", "sign", "soundex", "substr", "substring",
    "total_changes", "trim", "typeof", "unhex", "unicode", "unistr", "unistr_quote", "unlikely",
    "upper", "zeroblob",
    /* date and time */
    "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff", "current_date",
    "current_time", "current_timestamp",
    /* aggregates */
    "avg", "count", "group_concat", "max", "min", "string_agg", "sum", "total", "median",
    "percentile", "percentile_cont", "percentile_disc",
    /* window */
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value",
    /* math */
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh",
    "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power",
    "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
    /* JSON */
    "json", "jsonb", "json_array", "jsonb_array", "json_array_length", "json_error_position",
    "json_extract", "jsonb_extract", "->", "->>", "json_insert", "jsonb_insert", "json_object",
    "jsonb_object", "json_patch", "jsonb_patch", "json_pretty", "json_remove", "jsonb_remove",
    "json_replace", "jsonb_replace", "json_set", "jsonb_set", "json_type", "json_valid",
    "json_quote", "json_group_array", "jsonb_group_array", "json_group_object",
    "jsonb_group_object", "json_each", "json_tree",
    /* FTS5, R*Tree */
    "match", "highlight", "bm25", "snippet", "rtreecheck",
    /* used by SQLite itself for ALTER TABLE */
    "sqlite_rename_column", "sqlite_rename_table", "sqlite_rename_test", "sqlite_drop_column",
    "sqlite_rename_quotefix",
    /* the guard's own control function: protected by its secret, and it must pass here because
       SQLite re-prepares the engine's control statements (after a schema change) in tenant mode */
    "_hp_guard",
    0};

enum PragmaArg { NO_ARG, READ_ONLY_OR_NO_ARG, BOOLEAN, OBJECT_NAME, OPTIONAL_OBJECT_NAME,
                 NULL_OR_NUMBER, NULL_NUMBER_OR_OBJECT_NAME };

typedef struct PragmaRule {
  const char *name;
  enum PragmaArg arg;
} PragmaRule;

static const PragmaRule ALLOWED_PRAGMAS[] = {
    {"data_version", NO_ARG},
    {"page_size", NO_ARG}, /* R*Tree reads it */
    {"table_list", NO_ARG},
    {"table_info", OBJECT_NAME},
    {"table_xinfo", OBJECT_NAME},
    {"foreign_key_check", OPTIONAL_OBJECT_NAME},
    {"foreign_key_list", OBJECT_NAME},
    {"index_info", OBJECT_NAME},
    {"index_list", OBJECT_NAME},
    {"index_xinfo", OBJECT_NAME},
    {"quick_check", NULL_NUMBER_OR_OBJECT_NAME},
    /* Not "optimize": SQLite marks it a read-only statement returning rows, yet it runs ANALYZE,
       so it would write through /query, outside the engine's transaction (ANALYZE runs via exec). */
    {"user_version", NULL_OR_NUMBER}, /* applications version their schema with it */
    /* Scoped to the transaction the engine opens, so harmless. */
    {"defer_foreign_keys", BOOLEAN},
    /* Connection settings the platform fixes: readable, not settable (the connection outlives the
       call, so a change would leak into later calls and differ after a reopen). */
    {"foreign_keys", NO_ARG},
    {"case_sensitive_like", NO_ARG},
    {"recursive_triggers", NO_ARG},
    {0, NO_ARG}};

static int is_boolean_text(const char *v) {
  static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "1", "0", 0};
  char buf[8];
  size_t n = strlen(v);
  if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) {
    v++;
    n -= 2;
  }
  if (n == 0 || n >= sizeof(buf)) return 0;
  memcpy(buf, v, n);
  buf[n] = 0;
  for (int i = 0; words[i]; i++)
    if (strcasecmp(buf, words[i]) == 0) return 1;
  return 0;
}

static int is_integer_text(const char *v) {
  if (*v == '-' || *v == '+') v++;
  if (*v == 0) return 0;
  for (; *v; v++)
    if (*v < '0' || *v > '9') return 0;
  return 1;
}

static int pragma_allowed(const char *pragma, const char *arg) {
  for (int i = 0; ALLOWED_PRAGMAS[i].name; i++) {
    if (strcasecmp(pragma, ALLOWED_PRAGMAS[i].name) != 0) continue;
    switch (ALLOWED_PRAGMAS[i].arg) {
      case NO_ARG:
      case READ_ONLY_OR_NO_ARG: return arg == 0;
      case BOOLEAN: return arg == 0 || is_boolean_text(arg);
      case OBJECT_NAME: return arg != 0 && !is_reserved(arg);
      case OPTIONAL_OBJECT_NAME: return arg == 0 || !is_reserved(arg);
      case NULL_OR_NUMBER: return arg == 0 || is_integer_text(arg);
      case NULL_NUMBER_OR_OBJECT_NAME:
        return arg == 0 || is_integer_text(arg) || !is_reserved(arg);
    }
  }
  return 0;
}

/* Virtual table modules tenant SQL may use, each in tables it creates (all four need CREATE VIRTUAL
   TABLE: none is eponymous). The JSON table-valued functions (json_each, json_tree, jsonb_each,
   jsonb_tree) and the pragma_* ones are registered on first use, so never on the refused list; the
   pragma_* ones run their PRAGMA, which the authorizer judges like any other. */
static int module_allowed(const char *name) {
  static const char *const allowed[] = {"fts5",      "fts5vocab", "rtree",      "rtree_i32",
                                        "json_each", "json_tree", "jsonb_each", "jsonb_tree", 0};
  for (int i = 0; allowed[i]; i++)
    if (strcasecmp(name, allowed[i]) == 0) return 1;
  return has_prefix_ci(name, "pragma_");
}

/* Modules SQLite registers only when a statement names them (none is in this build's list at open). */
static const char *const LAZY_MODULES[] = {"carray", 0};

static int add_refused_module(Guard *g, const char *name) {
  if (g->refused_count >= MODULES_MAX) return SQLITE_ERROR; /* fail closed: the guard does not load */
  g->refused_modules[g->refused_count] = sqlite3_mprintf("%s", name);
  if (g->refused_modules[g->refused_count] == 0) return SQLITE_NOMEM;
  g->refused_count++;
  return SQLITE_OK;
}

/* Every module this SQLite has registered, minus the allowlist: dbstat, fts3, fts3tokenize, fts4aux,
   geopoly, … (and sqlite_dbpage, sqlite_stmt, bytecode, tables_used, generate_series in builds that
   have them). Asked of SQLite itself, so a build with other modules is covered without a change here.
   (workerd compiles its SQLite without them and refuses CREATE VIRTUAL TABLE beyond FTS5/R*Tree;
   this build is better-sqlite3's, with dbstat, so the authorizer must refuse the eponymous reads.) */
static int collect_refused_modules(Guard *g) {
  sqlite3_stmt *stmt = 0;
  int rc = sqlite3_prepare_v2(g->db, "SELECT name FROM pragma_module_list", -1, &stmt, 0);
  while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(stmt, 0);
    rc = name == 0 || module_allowed(name) ? SQLITE_OK : add_refused_module(g, name);
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return rc == SQLITE_OK ? SQLITE_ERROR : rc;
  for (int i = 0; LAZY_MODULES[i]; i++)
    if ((rc = add_refused_module(g, LAZY_MODULES[i])) != SQLITE_OK) return rc;
  return SQLITE_OK;
}

/* The refused module a table name is, or 0. Refused whatever the name resolves to: a tenant's own
   table of that name cannot be told apart from the eponymous one, since SQLite resolves
   `temp.dbstat` (no such temp table) to the eponymous table, which it files under "main" for the
   authorizer, where the tenant's table would make it look like the tenant's. Creating a table or a
   view of such a name is refused too (see authorize), so the name only ever means the module. */
static const char *refused_virtual_table(Guard *g, const char *table) {
  if (table == 0) return 0;
  for (int i = 0; i < g->refused_count; i++)
    if (strcasecmp(table, g->refused_modules[i]) == 0) return g->refused_modules[i];
  return 0;
}

static int function_allowed(const char *name) {
  if (name == 0) return 0;
  for (int i = 0; ALLOWED_FUNCTIONS[i]; i++)
    if (strcasecmp(name, ALLOWED_FUNCTIONS[i]) == 0) return 1;
  return 0;
}

/* ---- authorizer --------------------------------------------------------------------------- */

static int deny(Guard *g, const char *what, const char *name) {
  snprintf(g->reason, sizeof g->reason, "%s%s%s", what, name ? ": " : "", name ? name : "");
  return SQLITE_DENY;
}

/* A table tenant SQL may write to, or an object name it may create or drop. SQLite's own tables
   pass: it guards them itself (defensive mode refuses direct writes to the schema table, and
   sqlite_* names cannot be created), while its nested statements for CREATE/ALTER/DROP, ANALYZE
   and AUTOINCREMENT must write them. Internal tables therefore never use AUTOINCREMENT (tenant SQL
   can edit sqlite_sequence). */
static int writable_name(const char *name) { return name != 0 && !is_reserved(name); }

static int authorize(void *arg, int action, const char *a1, const char *a2, const char *dbName,
                     const char *trigger) {
  Guard *g = (Guard *)arg;
  (void)trigger;

  /* ATTACH is refused to everyone but the platform's own VACUUM, which attaches its scratch copy
     with an empty file name (VACUUM INTO names a path, and is refused even then). */
  if (action == SQLITE_ATTACH) {
    if (g->maintenance && g->engine && a1 != 0 && a1[0] == 0) return SQLITE_OK;
    return deny(g, "attach", 0);
  }
  if (action == SQLITE_DETACH) {
    if (g->maintenance && g->engine) return SQLITE_OK;
    return deny(g, "detach", 0);
  }
  if (g->engine) return SQLITE_OK;

  /* ALTER TABLE and DETACH pass the schema name first (see workerd); take it from there. */
  if (action == SQLITE_ALTER_TABLE) {
    const char *schema = a1;
    a1 = a2;
    dbName = schema;
  }
  /* Before the database check: an eponymous table answers under any schema name (temp.dbstat). */
  if (action == SQLITE_READ || action == SQLITE_INSERT || action == SQLITE_UPDATE ||
      action == SQLITE_DELETE) {
    const char *module = refused_virtual_table(g, a1);
    if (module != 0) return deny(g, "virtual table module", module);
  }
  if (dbName != 0 && strcmp(dbName, "main") != 0) {
    /* "temp": only the reads and updates SQLite plans on its own scratch tables. */
    if (strcmp(dbName, "temp") == 0 && (action == SQLITE_READ || action == SQLITE_UPDATE) &&
        !is_reserved(a1))
      return SQLITE_OK;
    return deny(g, "database", dbName);
  }

  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;

    case SQLITE_READ:
      return is_reserved(a1) ? deny(g, "reserved table", a1) : SQLITE_OK;

    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_VIEW:
      if (refused_virtual_table(g, a1) != 0) return deny(g, "virtual table module name", a1);
      return writable_name(a1) ? SQLITE_OK : deny(g, "reserved table", a1);

    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_VIEW:
    case SQLITE_REINDEX:
    case SQLITE_ALTER_TABLE:
      return writable_name(a1) ? SQLITE_OK : deny(g, "reserved table", a1);

    case SQLITE_CREATE_INDEX:
    case SQLITE_DROP_INDEX:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_DROP_TRIGGER:
      if (!writable_name(a1)) return deny(g, "reserved name", a1);
      return writable_name(a2) ? SQLITE_OK : deny(g, "reserved table", a2);

    case SQLITE_ANALYZE:
      /* Writes only sqlite_stat*, which leak no row data (workerd allows it for PRAGMA optimize). */
      return SQLITE_OK;

    case SQLITE_PRAGMA:
      return pragma_allowed(a1, a2) ? SQLITE_OK : deny(g, "pragma", a1);

    case SQLITE_FUNCTION:
      return function_allowed(a2) ? SQLITE_OK : deny(g, "function", a2);

    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      /* The engine opens and closes every transaction. */
      return deny(g, "transaction control", 0);

    case SQLITE_CREATE_VTABLE:
    case SQLITE_DROP_VTABLE:
      /* Full-text search and R*Tree only. */
      if (a2 != 0 && (strcasecmp(a2, "fts5") == 0 || strcasecmp(a2, "fts5vocab") == 0 ||
                      strcasecmp(a2, "rtree") == 0 || strcasecmp(a2, "rtree_i32") == 0))
        return writable_name(a1) ? SQLITE_OK : deny(g, "reserved table", a1);
      return deny(g, "virtual table module", a2);

    default:
      /* Temp objects, and anything SQLite adds later. */
      return deny(g, "operation", 0);
  }
}

/* ---- deadline ----------------------------------------------------------------------------- */

static int progress(void *arg) {
  Guard *g = (Guard *)arg;
  if (g->deadline_ns != 0 && now_ns() > g->deadline_ns) {
    g->timed_out = 1;
    return 1; /* SQLITE_INTERRUPT */
  }
  return 0;
}

/* ---- control function --------------------------------------------------------------------- */

static int secret_matches(Guard *g, sqlite3_value *v) {
  const unsigned char *given = sqlite3_value_text(v);
  size_t n = sizeof g->secret - 1;
  unsigned char diff = 0;
  if (!g->sealed || given == 0 || (size_t)sqlite3_value_bytes(v) != n) return 0;
  for (size_t i = 0; i < n; i++) diff |= (unsigned char)(given[i] ^ (unsigned char)g->secret[i]);
  return diff == 0;
}

static void control(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Guard *g = (Guard *)sqlite3_user_data(ctx);
  if (argc == 1) {
    const char *op = (const char *)sqlite3_value_text(argv[0]);
    if (op != 0 && strcmp(op, "init") == 0 && !g->sealed) {
      g->sealed = 1;
      sqlite3_result_text(ctx, g->secret, -1, SQLITE_TRANSIENT);
      return;
    }
    sqlite3_result_error(ctx, "not authorized", -1);
    return;
  }
  if (argc < 2 || !secret_matches(g, argv[0])) {
    sqlite3_result_error(ctx, "not authorized", -1);
    return;
  }
  const char *op = (const char *)sqlite3_value_text(argv[1]);
  if (op == 0) {
    sqlite3_result_error(ctx, "guard: no operation", -1);
  } else if (strcmp(op, "engine") == 0) {
    g->engine = 1;
    g->deadline_ns = 0;
    /* The tenant statement inserted nothing: the connection's value as it was before it. */
    if (sqlite3_last_insert_rowid(g->db) == NO_ROWID)
      sqlite3_set_last_insert_rowid(g->db, g->saved_rowid);
    sqlite3_limit(g->db, SQLITE_LIMIT_LENGTH, ENGINE_LENGTH);
    sqlite3_result_null(ctx);
  } else if (strcmp(op, "tenant") == 0 && (argc == 3 || argc == 4)) {
    /* Deadline for the statements that follow (ms); the engine calls this before each one. The
       optional fourth argument caps each value they make or read (SQLITE_LIMIT_LENGTH, which also
       caps a stored row): a query shares its response cap between its columns this way, so that
       SQLite itself never builds a row larger than the answer may be. Back to ENGINE_LENGTH in
       engine mode. */
    int64_t ms = sqlite3_value_int64(argv[2]);
    if (argc == 4) {
      int64_t cap = sqlite3_value_int64(argv[3]);
      sqlite3_limit(g->db, SQLITE_LIMIT_LENGTH,
                    cap < 1 ? 1 : cap > ENGINE_LENGTH ? ENGINE_LENGTH : (int)cap);
    }
    g->engine = 0;
    g->timed_out = 0;
    g->reason[0] = 0;
    g->deadline_ns = now_ns() + (ms > 0 ? ms : 1) * 1000000;
    sqlite3_int64 rowid = sqlite3_last_insert_rowid(g->db);
    if (rowid != NO_ROWID) g->saved_rowid = rowid;
    sqlite3_set_last_insert_rowid(g->db, NO_ROWID);
    sqlite3_result_null(ctx);
  } else if (strcmp(op, "maintenance") == 0 && argc == 3) {
    g->maintenance = sqlite3_value_int(argv[2]) != 0;
    /* VACUUM attaches its scratch database: one attachment while the flag is up. */
    sqlite3_limit(g->db, SQLITE_LIMIT_ATTACHED, g->maintenance ? 1 : 0);
    sqlite3_result_null(ctx);
  } else if (strcmp(op, "limit") == 0 && argc == 4) {
    int id = sqlite3_value_int(argv[2]);
    if (id == SQLITE_LIMIT_ATTACHED) {
      sqlite3_result_error(ctx, "guard: the attached limit stays 0", -1);
      return;
    }
    sqlite3_result_int(ctx, sqlite3_limit(g->db, id, sqlite3_value_int(argv[3])));
  } else if (strcmp(op, "status") == 0) {
    /* Why the last tenant statement failed: "timeout", the authorizer's reason, or NULL. */
    if (g->timed_out)
      sqlite3_result_text(ctx, "timeout", -1, SQLITE_STATIC);
    else if (g->reason[0])
      sqlite3_result_text(ctx, g->reason, -1, SQLITE_TRANSIENT);
    else
      sqlite3_result_null(ctx);
  } else {
    sqlite3_result_error(ctx, "guard: unknown operation", -1);
  }
}

/* last_insert_rowid() for SQL, in place of SQLite's: while a tenant statement has inserted nothing
   yet, the value from before it (not the marker), so `INSERT … VALUES (last_insert_rowid())` after
   an insert, in a batch or a later call, sees what SQLite would show. */
static void last_insert_rowid_sql(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Guard *g = (Guard *)sqlite3_user_data(ctx);
  sqlite3_int64 rowid = sqlite3_last_insert_rowid(g->db);
  (void)argc;
  (void)argv;
  sqlite3_result_int64(ctx, rowid == NO_ROWID ? g->saved_rowid : rowid);
}

static void free_guard(void *arg) {
  Guard *g = (Guard *)arg;
  for (int i = 0; i < g->refused_count; i++) sqlite3_free(g->refused_modules[i]);
  sqlite3_free(g);
}

/* ---- entry point -------------------------------------------------------------------------- */

/* Limits for tenant SQL (sqlite.org/security.html, workerd); the engine may adjust some. */
static void set_limits(sqlite3 *db) {
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, ENGINE_LENGTH);
  sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 100000);
  sqlite3_limit(db, SQLITE_LIMIT_COLUMN, 200);
  sqlite3_limit(db, SQLITE_LIMIT_EXPR_DEPTH, 100);
  sqlite3_limit(db, SQLITE_LIMIT_COMPOUND_SELECT, 20);
  sqlite3_limit(db, SQLITE_LIMIT_VDBE_OP, 25000);
  sqlite3_limit(db, SQLITE_LIMIT_FUNCTION_ARG, 127);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 50);
  sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, 999);
  sqlite3_limit(db, SQLITE_LIMIT_TRIGGER_DEPTH, 10);
  sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, 0);
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_sqliteguard_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  /* A SQLite without the progress callback cannot enforce the deadline: refuse to run at all. */
  if (sqlite3_compileoption_used("OMIT_PROGRESS_CALLBACK")) {
    *pzErrMsg = sqlite3_mprintf("guard: this SQLite was built without the progress callback");
    return SQLITE_ERROR;
  }
  Guard *g = (Guard *)sqlite3_malloc(sizeof(Guard));
  if (g == 0) return SQLITE_NOMEM;
  memset(g, 0, sizeof *g);
  g->db = db;
  g->engine = 1; /* until the engine switches to tenant mode */
  unsigned char raw[SECRET_BYTES];
  sqlite3_randomness(sizeof raw, raw);
  for (int i = 0; i < SECRET_BYTES; i++) snprintf(g->secret + 2 * i, 3, "%02x", raw[i]);

  /* The struct goes with the function when the connection closes. */
  int rc = sqlite3_create_function_v2(db, "_hp_guard", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, g,
                                      control, 0, 0, free_guard);
  if (rc != SQLITE_OK) {
    *pzErrMsg = sqlite3_mprintf("guard: cannot register _hp_guard");
    return rc;
  }
  rc = sqlite3_create_function_v2(db, "last_insert_rowid", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, g,
                                  last_insert_rowid_sql, 0, 0, 0);
  if (rc != SQLITE_OK) {
    *pzErrMsg = sqlite3_mprintf("guard: cannot register last_insert_rowid");
    return rc;
  }
  rc = collect_refused_modules(g);
  if (rc != SQLITE_OK) {
    *pzErrMsg = sqlite3_mprintf("guard: cannot list the virtual table modules");
    return rc;
  }
  set_limits(db);
  sqlite3_set_authorizer(db, authorize, g);
  sqlite3_progress_handler(db, 1000, progress, g);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)0);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE, 0, (int *)0);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE, 0, (int *)0);
  return SQLITE_OK;
}
