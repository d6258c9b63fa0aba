/**
 * An error that already knows its HTTP answer. Services throw it; the error middleware sends
 * `status` with `body` as JSON. Bodies always carry `error` and `message` unless a spec section
 * says otherwise (the publish endpoints).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: { error: string; message: string; [extra: string]: unknown },
    options?: { cause?: unknown },
  ) {
    super(body.message, options);
  }

  static badRequest(message: string, error = 'Bad Request', extra: Record<string, unknown> = {}): ApiError {
    return new ApiError(400, { error, message, ...extra });
  }

  static notFound(message: string): ApiError {
    return new ApiError(404, { error: 'Not found', message });
  }

  static conflict(message: string): ApiError {
    return new ApiError(409, { error: 'Conflict', message });
  }

  static forbidden(message: string): ApiError {
    return new ApiError(403, { error: 'Forbidden', message });
  }
}

export const unauthorizedHint =
  'Ask the user for a valid Hostplane API key (sent as the X-API-Key header). ' +
  'Permanent keys are created per site by the account owner; temporary keys come from POST /api/keys/generate-temp.';

export function unauthorized(message: string, hint = unauthorizedHint): ApiError {
  return new ApiError(401, { error: 'Unauthorized', message, hint_for_ai: hint });
}
