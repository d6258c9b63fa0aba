import { packageVersion } from '../version.js';

const ENV = `
Environment:
  HOSTPLANE_API_KEY  The site's API key (required; never a flag: it would stay in shell history)
  HOSTPLANE_API_URL  The API's address when --api is not given (default http://localhost:8080)

Exit codes: 0 done, 1 refused, 2 usage, 3 key refused, 4 limit, 5 API unreachable (\`hostplane help\`).`;

/** `--help` text of each command, and of the program (key ''). */
export const usages = {
  '': `Usage: hostplane <command> [options]

Commands:
  serve          Start the server (every role by default)
  migrate        Apply pending database migrations, then exit
  admin          Operator commands: create-site, invite, session, drain-shard

Site commands (over the HTTP API, with the site's key in HOSTPLANE_API_KEY):
  deploy DIR     Deploy a folder as the whole site: uploads only what the server lacks
  deploys        List the site's deploys
  rollback [ID]  Make an earlier deploy live again (by default the one before the live one)
  publish ID     Make a draft deploy live

Options:
  -h, --help     Show help (also after any command: hostplane serve --help)
  -v, --version  Print the version

Exit codes:
  0  done
  1  the command failed (the server or a local check refused it; the message says why)
  2  the command line or the configuration is wrong (also: HOSTPLANE_API_KEY not set)
  3  the API key was refused (unknown, expired, revoked, or scoped to another site)
  4  a limit refused it (the plan's file, folder or storage limit; a file over 10 MB)
  5  the API could not be reached, or kept failing, after retries
  130, 143  deploy interrupted by SIGINT or SIGTERM (the deploy it started was cancelled)

Configuration comes from environment variables (HOSTPLANE_DATA_DIR, DATABASE_URL, PORT, ...);
see docs/operators/configuration.md.`,

  serve: `Usage: hostplane serve [--role all|api|edge|sqlite|controller]

Starts Hostplane on PORT (default 8080).
  --role all         API, sites, SQLite databases and background work in one process (default).
                     On a fresh database it applies the migrations first.
  --role api|edge    One role, as the Helm chart runs them. Waits for \`hostplane migrate\` when the
                     schema is behind (HOSTPLANE_SCHEMA_WAIT_SECONDS, default 300; /readyz says 503).
                     The api role forwards every SQLite call that needs a database file to a shard.
  --role sqlite      A SQLite shard: owns database files (placed on it, leased in PostgreSQL) and
                     serves the SQLite API for them, mostly as calls forwarded by api pods. Set
                     HOSTPLANE_SQLITE_SHARD_NAME and HOSTPLANE_SQLITE_SHARD_URL (how api pods reach it).
  --role controller  The Kubernetes reconcilers (needs HOSTPLANE_KUBERNETES=true).

Without DATABASE_URL the database is embedded (PGlite) in HOSTPLANE_DATA_DIR (default ./data).
While PostgreSQL or S3 cannot be reached it waits for them (trying again with back-off, /healthz
200, /readyz 503) instead of exiting.`,

  migrate: `Usage: hostplane migrate

Applies the database migrations this version needs, under a lock (several at once are safe),
then exits. Run it before upgrading api, edge and controller pods (the Helm chart does).
Uses DATABASE_URL, or the embedded database in HOSTPLANE_DATA_DIR.`,

  admin: `Usage: hostplane admin <command> [options]

Commands:
  create-site    Create a site (and its account when the email is new) with one API key
  invite         Invite a site owner: a one-time link to set their password (mailed when SMTP is set)
  session        Mint an account session token (24 hours)
  drain-shard    Move every SQLite database off a shard (before scaling it away)

Works against a running server on the same data dir (over its admin socket) or on its own.
Run \`hostplane admin <command> --help\` for a command's options.`,

  'admin create-site': `Usage: hostplane admin create-site --slug SLUG --email EMAIL [options]

  --slug SLUG      The site's subdomain: lowercase letters, digits and single hyphens (no "--")
  --email EMAIL    The owner's account (created when new)
  --plan PLAN      free (default), standard, premium, business or enterprise
  --name NAME      A display name (default: the slug)
  --json           Print one JSON object (the API key is shown once)`,

  'admin invite': `Usage: hostplane admin invite --email EMAIL [--plan PLAN] [--json]

Creates the account when new (without a password) and prints a one-time link to the console
page where the owner sets a password (valid 7 days; a new invitation replaces the last). With
SMTP_URL set the link is also mailed. An account that already has a password is refused: its
owner resets it from the sign-in page.
  --email EMAIL    The owner's address
  --plan PLAN      free (default for a new account), standard, premium, business or enterprise
  --json           Print one JSON object: {"accountId", "email", "link", "expiresAt", "mailed"}`,

  'admin session': `Usage: hostplane admin session --email EMAIL [--json]

  --email EMAIL    The account to mint a session for
  --json           Print one JSON object: {"token", "expiresAt"}`,

  'admin drain-shard': `Usage: hostplane admin drain-shard --shard NAME [--to NAME] [--json]

Moves every SQLite database placed on the shard to the live shard with the fewest (or to --to):
its owner stops writes, syncs the replica and lets it go; the new shard restores it from the
replica on its first call. The shard gets no new databases until it starts again. Databases with
replication off stay (their only copy is on that shard) and are listed.
  --shard NAME     The shard to drain (HOSTPLANE_SQLITE_SHARD_NAME; in the cluster, the pod name)
  --to NAME        Move everything to this shard instead
  --json           Print one JSON object: {"shard", "moved": [...], "left": [...]}`,
  deploy: `Usage: hostplane deploy DIR [--api URL] [--draft] [--dry-run] [--message TEXT] [--concurrency N] [--json]

Deploys the folder DIR as the whole site: hashes every file (SHA-256), sends the manifest, uploads
only the files the server does not have yet, then switches the site to the new version at once.
Left out: .git/, node_modules/, .DS_Store, Thumbs.db and what DIR/.hostplaneignore lists
(gitignore syntax; \`!pattern\` re-includes). SQLite database files (.db, .sqlite, …) are skipped
with a note: a deploy never replaces the site's databases. Symbolic links are followed inside DIR
only. Files the server would refuse (an extension it does not serve, a bad name, over 10 MB) stop
the deploy before anything is sent. Transient failures (network errors, 429, 502, 503, 504) are
retried with back-off (Retry-After honoured), 5 attempts per call; a host name that does not
resolve (ENOTFOUND) is not. Interrupted (Ctrl-C, SIGTERM) or failed, the command cancels the
deploy it started before it exits.
  --api URL          The API (default: HOSTPLANE_API_URL, else http://localhost:8080)
  --draft            Do not publish: print the preview URL (publish later with \`hostplane publish ID\`)
  --dry-run          Hash and compare with the live deploy; upload and change nothing
  --message TEXT     Kept with the deploy, shown by \`hostplane deploys\` (at most 500 characters)
  --concurrency N    Uploads at once (1-32, default 8)
  --json             Print one JSON object on stdout (progress and notes go to stderr)
${ENV}`,

  deploys: `Usage: hostplane deploys [--api URL] [--limit N] [--json]

Lists the site's newest deploys: id, state, when, files, size, the key that made it, its message
(when one has one), and which one is live (drafts show their preview URL).
  --api URL    The API (default: HOSTPLANE_API_URL, else http://localhost:8080)
  --limit N    How many (1-100, default 20)
  --json       Print the API's answer as one JSON object
${ENV}`,

  rollback: `Usage: hostplane rollback [ID] [--api URL] [--json]

Makes deploy ID live again, at once (nothing is uploaded). Without ID: the published deploy made
before the live one, so rollbacks in a row step back through the history (if the files API changed
the live files since the live deploy, that deploy itself). Prints what is live now.
  --api URL    The API (default: HOSTPLANE_API_URL, else http://localhost:8080)
  --json       Print one JSON object: the deploy now live and live_url
${ENV}`,

  publish: `Usage: hostplane publish ID [--api URL] [--json]

Makes the draft deploy ID (from \`hostplane deploy --draft\`) live.
  --api URL    The API (default: HOSTPLANE_API_URL, else http://localhost:8080)
  --json       Print one JSON object: the deploy now live and live_url
${ENV}`,
} as const;

export type CommandName = keyof typeof usages;

/** The version in package.json. */
export const version = packageVersion;
