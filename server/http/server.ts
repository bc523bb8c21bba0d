// The HTTP server around the Express app. Node's HTTP parser refuses some
// requests before Express sees them (a request line or headers over
// `maxHeaderSize`, 16 KB by default; a raw non-ASCII byte or a control
// character in the path or a header; a malformed request line), and by default
// answers them with an empty body. Here those answers carry the envelope and a
// code of db/ERRORS.md like every other answer.
import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, errorBody } from '../errors.ts';

/** What Node's parser refusal becomes (status, code, message); exported for the tests. */
export function clientErrorAnswer(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(431, 'HEADERS_TOO_LARGE', 'The request line and headers are larger than 16 KB; send a shorter URL or fewer headers.');
    case 'HPE_INVALID_URL':
      return new ApiError(400, 'MALFORMED_URL', 'The URL is not valid: percent-encode every byte outside printable ASCII.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_HEADERS_TIMEOUT':
      return new ApiError(408, 'REQUEST_TIMEOUT', 'The request did not arrive in time.');
    default:
      return new ApiError(400, 'BAD_REQUEST', 'The request is not valid HTTP/1.1.');
  }
}

/** Writes an envelope answer to a socket Node's parser gave up on, and closes it. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const e = clientErrorAnswer(err.code);
  const body = JSON.stringify(errorBody(requestId, e));
  socket.end(
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      'X-Content-Type-Options: nosniff\r\n' +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** `http.createServer(app)` with envelope answers for what the parser refuses. */
export function createHttpServer(app: RequestListener): Server {
  const server = createServer(app);
  server.on('clientError', answerClientError);
  // An idle keep-alive connection stays open 65 s, longer than the idle
  // timeout of the usual proxies and load balancers (60 s) and of HTTP
  // clients' pools (undici 4 s): the client or proxy closes it first, so a
  // request is never sent on a socket the server is closing at that moment
  // (Node's default of 5 s races clients on a busy machine).
  server.keepAliveTimeout = 65_000;
  return server;
}
