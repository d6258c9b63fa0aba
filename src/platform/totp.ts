import { createCipheriv, createDecipheriv, createHash, randomBytes, randomInt } from 'node:crypto';
import { and, count, eq, gt, isNull, lt, or, sql } from 'drizzle-orm';
import { Secret, TOTP } from 'otpauth';
import { AppError } from '../errors/index.js';
import type { Db, Executor } from '../store/index.js';
import { hashSecret, newSecret } from './secrets.js';
import { accountRecoveryCodes, accountSignInChallenges, accountTotp } from './tables.js';

const ISSUER = 'Hostplane';
const PERIOD_SECONDS = 30;
/** One step either side of now: a phone whose clock is up to 30 s off still works. */
const WINDOW = 1;
export const RECOVERY_CODE_COUNT = 10;
export const CHALLENGE_SECONDS = 5 * 60;
/** Codes one challenge answers (each claimed before it is checked): void after five wrong ones. */
const CHALLENGE_ATTEMPTS = 5;
const TAG_BYTES = 16;
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

export type SessionMode = 'bearer' | 'cookie';
/** What proves the second factor: a current code or one unused recovery code. */
export interface Proof {
  code?: string | undefined;
  recoveryCode?: string | undefined;
}

/** `xxxxx-xxxxx`: 10 characters of a 31-letter alphabet without look-alikes (~49 bits). */
function newRecoveryCode(): string {
  let code = '';
  for (let i = 0; i < 10; i++) code += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}
const normalizeRecovery = (code: string) => code.toLowerCase().replace(/[\s-]/g, '').slice(0, 40);

/**
 * The TOTP second factor (RFC 6238, 6 digits, 30 s, SHA-1: what every authenticator app reads)
 * with single-use recovery codes, and the second step of a sign-in. The secret is kept encrypted
 * with a server secret (AES-256-GCM); recovery codes and challenges are stored as sha256 hashes.
 * A code's time step is recorded when it is accepted, and no code of that step or an earlier one is
 * accepted again (replay), in one conditional UPDATE, so two replicas cannot both accept it.
 */
export class SecondFactor {
  constructor(
    private readonly db: Db,
    private readonly serverKey: () => Promise<Buffer>,
  ) {}

  async status(accountId: number): Promise<{ enabled: boolean; recoveryCodesLeft: number }> {
    const row = await this.row(this.db, accountId);
    const [left] = await this.db
      .select({ n: count() })
      .from(accountRecoveryCodes)
      .where(and(eq(accountRecoveryCodes.accountId, accountId), isNull(accountRecoveryCodes.usedAt)));
    return { enabled: Boolean(row?.enabledAt), recoveryCodesLeft: row?.enabledAt ? (left?.n ?? 0) : 0 };
  }

  async isEnabled(accountId: number): Promise<boolean> {
    return Boolean((await this.row(this.db, accountId))?.enabledAt);
  }

  /** A new secret for the account (replacing one not confirmed yet); on only after `confirm`. */
  async setup(accountId: number, email: string): Promise<{ secret: string; uri: string }> {
    const current = await this.row(this.db, accountId);
    if (current?.enabledAt) throw new AppError('TOTP_ALREADY_ENABLED');
    const secret = new Secret({ size: 20 });
    const secretEncrypted = await this.encrypt(secret.base32);
    const kept = await this.db
      .insert(accountTotp)
      .values({ accountId, secretEncrypted })
      .onConflictDoUpdate({
        target: accountTotp.accountId,
        set: { secretEncrypted, lastStep: null, createdAt: sql`now()` },
        where: isNull(accountTotp.enabledAt),
      })
      .returning({ accountId: accountTotp.accountId });
    // Turned on meanwhile (a confirm in between): the new secret was not kept, so it is not shown.
    if (kept.length === 0) throw new AppError('TOTP_ALREADY_ENABLED');
    return { secret: secret.base32, uri: this.totpOf(secret.base32, email).toString() };
  }

  /** Turns TOTP on with a current code of the new secret; the recovery codes (shown once). */
  async confirm(accountId: number, code: string): Promise<string[]> {
    return this.db.transaction(async (tx) => {
      const row = await this.row(tx, accountId, true);
      if (!row)
        throw new AppError('TOTP_NOT_ENABLED', { message: 'Start the setup first: no secret is waiting.' });
      if (row.enabledAt) throw new AppError('TOTP_ALREADY_ENABLED');
      if (!(await this.acceptCode(tx, accountId, row.secretEncrypted, code)))
        throw new AppError('INVALID_TOTP_CODE');
      await tx
        .update(accountTotp)
        .set({ enabledAt: sql`now()` })
        .where(eq(accountTotp.accountId, accountId));
      return this.replaceRecoveryCodes(tx, accountId);
    });
  }

  /** Turns TOTP off (the caller checked the password) with a current code or a recovery code. */
  async disable(accountId: number, proof: Proof): Promise<void> {
    await this.db.transaction(async (tx) => {
      await this.prove(tx, accountId, proof);
      await tx.delete(accountTotp).where(eq(accountTotp.accountId, accountId));
      await tx.delete(accountRecoveryCodes).where(eq(accountRecoveryCodes.accountId, accountId));
    });
  }

  /** Checks a current code of an account with TOTP on (sudo mode); the code is used up by it. */
  async check(accountId: number, code: string): Promise<void> {
    await this.db.transaction((tx) => this.prove(tx, accountId, { code, recoveryCode: undefined }));
  }

  /** New recovery codes (the earlier ones stop working), after a current code. */
  async regenerate(accountId: number, proof: Proof): Promise<string[]> {
    return this.db.transaction(async (tx) => {
      await this.prove(tx, accountId, proof);
      return this.replaceRecoveryCodes(tx, accountId);
    });
  }

  /** The first step of a sign-in went through: a single-use challenge for the second. */
  async startChallenge(
    accountId: number,
    session: SessionMode,
  ): Promise<{ challenge: string; expiresAt: Date }> {
    const challenge = newSecret('hp_2fa_');
    const expiresAt = new Date(Date.now() + CHALLENGE_SECONDS * 1000);
    await this.db
      .insert(accountSignInChallenges)
      .values({ accountId, tokenHash: hashSecret(challenge), session, expiresAt });
    return { challenge, expiresAt };
  }

  /** The account a challenge is for (to rate-limit it before any code is checked). */
  async challengeAccount(challenge: string): Promise<number> {
    const row = await this.liveChallenge(this.db, challenge);
    if (!row) throw new AppError('INVALID_CHALLENGE');
    return row.accountId;
  }

  /**
   * Finishes a sign-in. An attempt is claimed first, in one conditional UPDATE (committed whatever
   * follows): requests arriving together cannot all pass the cap of five, as a read-then-count
   * could. Then the proof is checked and the challenge used, in one transaction.
   */
  async finishChallenge(
    challenge: string,
    proof: Proof,
  ): Promise<{ accountId: number; session: SessionMode }> {
    if (challenge.length < 16 || challenge.length > 200) throw new AppError('INVALID_CHALLENGE');
    const [claimed] = await this.db
      .update(accountSignInChallenges)
      .set({ attempts: sql`${accountSignInChallenges.attempts} + 1` })
      .where(and(eq(accountSignInChallenges.tokenHash, hashSecret(challenge)), ...this.live()))
      .returning();
    if (!claimed) throw new AppError('INVALID_CHALLENGE');
    const proven = await this.db.transaction(async (tx) => {
      if (!(await this.proves(tx, claimed.accountId, proof))) return false;
      const used = await tx
        .update(accountSignInChallenges)
        .set({ usedAt: sql`now()` })
        .where(and(eq(accountSignInChallenges.id, claimed.id), isNull(accountSignInChallenges.usedAt)))
        .returning({ id: accountSignInChallenges.id });
      if (used.length === 0) throw new AppError('INVALID_CHALLENGE');
      return true;
    });
    if (!proven) throw new AppError('INVALID_TOTP_CODE');
    return { accountId: claimed.accountId, session: claimed.session };
  }

  /** Deletes challenges a day past their end; how many went. */
  async sweepExpired(): Promise<number> {
    const rows = await this.db
      .delete(accountSignInChallenges)
      .where(sql`${accountSignInChallenges.expiresAt} < now() - interval '1 day'`)
      .returning({ id: accountSignInChallenges.id });
    return rows.length;
  }

  private async prove(tx: Executor, accountId: number, proof: Proof): Promise<void> {
    const row = await this.row(tx, accountId);
    if (!row?.enabledAt) throw new AppError('TOTP_NOT_ENABLED', { message: 'Two-factor sign-in is off.' });
    if (!(await this.proves(tx, accountId, proof))) throw new AppError('INVALID_TOTP_CODE');
  }

  /** Whether the proof holds for an account with TOTP on; a code or recovery code is used up by it. */
  private async proves(tx: Executor, accountId: number, proof: Proof): Promise<boolean> {
    const row = await this.row(tx, accountId);
    if (!row?.enabledAt) return false;
    if (proof.code !== undefined) return this.acceptCode(tx, accountId, row.secretEncrypted, proof.code);
    if (proof.recoveryCode === undefined) return false;
    const normalized = normalizeRecovery(proof.recoveryCode);
    if (normalized.length !== 10) return false;
    // Found by its hash (an index search, as for every credential here), used once in the same statement.
    const used = await tx
      .update(accountRecoveryCodes)
      .set({ usedAt: sql`now()` })
      .where(
        and(
          eq(accountRecoveryCodes.accountId, accountId),
          eq(accountRecoveryCodes.codeHash, hashSecret(normalized)),
          isNull(accountRecoveryCodes.usedAt),
        ),
      )
      .returning({ id: accountRecoveryCodes.id });
    return used.length > 0;
  }

  /** Checks a 6-digit code (otpauth compares in constant time) and records its step: never twice. */
  private async acceptCode(tx: Executor, accountId: number, secretEncrypted: string, code: string) {
    const token = code.replace(/\s/g, '');
    if (!/^\d{6}$/.test(token)) return false;
    const totp = this.totpOf(await this.decrypt(secretEncrypted), '');
    const now = Date.now();
    const delta = totp.validate({ token, timestamp: now, window: WINDOW });
    if (delta === null) return false;
    const step = totp.counter({ timestamp: now }) + delta;
    const recorded = await tx
      .update(accountTotp)
      .set({ lastStep: step })
      .where(
        and(
          eq(accountTotp.accountId, accountId),
          or(isNull(accountTotp.lastStep), lt(accountTotp.lastStep, step)),
        ),
      )
      .returning({ accountId: accountTotp.accountId });
    return recorded.length > 0;
  }

  private async replaceRecoveryCodes(tx: Executor, accountId: number): Promise<string[]> {
    await tx.delete(accountRecoveryCodes).where(eq(accountRecoveryCodes.accountId, accountId));
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await tx
      .insert(accountRecoveryCodes)
      .values(codes.map((code) => ({ accountId, codeHash: hashSecret(normalizeRecovery(code)) })));
    return codes;
  }

  private async liveChallenge(db: Executor, challenge: string) {
    if (challenge.length < 16 || challenge.length > 200) return undefined;
    const [row] = await db
      .select()
      .from(accountSignInChallenges)
      .where(and(eq(accountSignInChallenges.tokenHash, hashSecret(challenge)), ...this.live()));
    return row;
  }

  /** A challenge still answerable: not used, not expired, attempts left. */
  private live() {
    return [
      isNull(accountSignInChallenges.usedAt),
      gt(accountSignInChallenges.expiresAt, sql`now()`),
      lt(accountSignInChallenges.attempts, CHALLENGE_ATTEMPTS),
    ];
  }

  private async row(db: Executor, accountId: number, forUpdate = false) {
    const query = db.select().from(accountTotp).where(eq(accountTotp.accountId, accountId));
    const [row] = forUpdate ? await query.for('update') : await query;
    return row;
  }

  private totpOf(base32: string, email: string): TOTP {
    return new TOTP({
      issuer: ISSUER,
      label: email || 'account',
      algorithm: 'SHA1',
      digits: 6,
      period: PERIOD_SECONDS,
      secret: Secret.fromBase32(base32),
    });
  }

  private async cipherKey(): Promise<Buffer> {
    return createHash('sha256')
      .update('hostplane account totp v1\0')
      .update(await this.serverKey())
      .digest();
  }

  private async encrypt(plain: string): Promise<string> {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', await this.cipherKey(), iv, { authTagLength: TAG_BYTES });
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), data]
      .map((x) => (typeof x === 'string' ? x : x.toString('base64url')))
      .join('.');
  }

  private async decrypt(stored: string): Promise<string> {
    const [version, iv, tag, data] = stored.split('.');
    if (version !== 'v1' || !iv || !tag || !data) throw new Error('unreadable TOTP secret');
    // The tag's full 16 bytes: without authTagLength, Node also takes a tag cut to 4 (a forgery's odds).
    const decipher = createDecipheriv('aes-256-gcm', await this.cipherKey(), Buffer.from(iv, 'base64url'), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }
}
