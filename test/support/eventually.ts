const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` until it returns a value other than undefined or false, and returns that value.
 * Errors thrown meanwhile count as "not yet"; the last one is quoted when `timeoutMs` runs out.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`, { cause: lastError });
    }
    await pause(100);
  }
}

/** Retries `assertion` (e.g. a block of expect() calls) until it stops throwing. */
export async function eventuallyPasses(
  what: string,
  assertion: () => unknown,
  timeoutMs = 10_000,
): Promise<void> {
  await eventually(
    what,
    async () => {
      await assertion();
      return true;
    },
    timeoutMs,
  );
}
