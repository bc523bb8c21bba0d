// The error every layer may throw to answer with an HTTP status and a stable
// machine code (db/ERRORS.md lists them), and the envelope it is sent in.
// Kept out of server/http/ so storage, jobs and connectors can use it without
// depending on the HTTP layer; server/http/errors.ts re-exports it.

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | null;
  readonly headers: Record<string, string>;
  constructor(status: number, code: string, message: string, details: Record<string, unknown> | null = null, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.headers = headers;
  }
}

/** `{"error": {code, message, requestId, details}}`: the body of every failure. */
export function errorBody(requestId: string, e: ApiError) {
  return { error: { code: e.code, message: e.message, requestId, details: e.details } };
}
