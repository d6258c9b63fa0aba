import busboy from 'busboy';
import type { Readable } from 'node:stream';
import type { Request, Response } from 'express';
import { AppError } from '../errors/index.js';
import { videoExtensions } from './file-types.js';
import { normalizeSitePath } from './paths.js';
import { assertExtension } from './upload-rules.js';
import { MAX_VIDEO_BYTES, type FilesService, type StagedBlob } from './service.js';

const videoTooLarge = () => new AppError('VIDEO_TOO_LARGE', { maxBytes: MAX_VIDEO_BYTES });

const malformed = () =>
  new AppError('INVALID_REQUEST', { message: 'Malformed multipart/form-data request.' });

function validVideoPath(raw: string | undefined): string {
  if (raw === undefined || raw === '')
    throw new AppError('MISSING_PATH', { message: 'The "path" field is required.' });
  const sitePath = normalizeSitePath(raw);
  assertExtension(sitePath, videoExtensions, 'path', '');
  return sitePath;
}

/**
 * Reads a multipart video upload: the `file` part streams straight into a staged blob while the
 * request arrives; `path` may come before or after it. Resolves once the staged blob is complete.
 */
export function receiveVideo(
  req: Request,
  res: Response,
  files: FilesService,
): Promise<{ sitePath: string; staged: StagedBlob }> {
  return new Promise((resolve, reject) => {
    if (!req.is('multipart/form-data')) {
      reject(
        new AppError('NO_FILE', {
          message: 'Send the video as multipart/form-data with "file" and "path" fields.',
        }),
      );
      return;
    }
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // busboy reports `limit` on reaching fileSize, so one byte of headroom lets exactly 50 MB through.
        limits: { fileSize: MAX_VIDEO_BYTES + 1, files: 1, fields: 10, fieldSize: 4096 },
      });
    } catch {
      reject(malformed());
      return;
    }
    let rawPath: string | undefined;
    let staging: Promise<StagedBlob> | undefined;
    let truncated = false;
    let earlyError: unknown;
    let fileStream: Readable | undefined;
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      req.resume();
      // Ending the part stream makes the staging write fail and remove its temporary blob.
      fileStream?.destroy(new Error('upload abandoned'));
      parser.destroy();
      staging?.then((st) => files.discardStaged(st)).catch(() => undefined);
      reject(err);
    };

    // Only the documented parts: anything else is refused (once the body is read), not ignored.
    const unknown = (name: string) =>
      (earlyError ??= new AppError('INVALID_REQUEST', {
        message: `Unknown multipart field "${name.slice(0, 60)}": send only "file" and "path".`,
      }));
    parser.on('field', (name, value) => {
      if (name === 'path') rawPath = value;
      else unknown(name);
    });
    parser.on('file', (name, stream) => {
      // A body that ends mid-part errors this stream; the parser's own error event answers it.
      stream.on('error', () => undefined);
      if (name !== 'file' || staging) {
        if (name !== 'file') unknown(name);
        stream.resume();
        return;
      }
      if (rawPath !== undefined) {
        try {
          validVideoPath(rawPath);
        } catch (err) {
          earlyError = err;
          stream.resume();
          return;
        }
      }
      stream.on('limit', () => (truncated = true));
      fileStream = stream;
      staging = files.stage(stream);
      staging.catch(() => undefined);
    });
    parser.on('error', () => fail(malformed()));
    parser.on('close', () => {
      void (async () => {
        if (settled) return;
        if (earlyError) return fail(earlyError);
        if (!staging) {
          if (rawPath !== undefined) validVideoPath(rawPath);
          return fail(
            new AppError('NO_FILE', { message: 'No file was uploaded: send it in the "file" field.' }),
          );
        }
        const staged = await staging;
        if (truncated) return fail(videoTooLarge());
        let sitePath: string;
        try {
          sitePath = validVideoPath(rawPath);
        } catch (err) {
          return fail(err);
        }
        settled = true;
        resolve({ sitePath, staged });
      })().catch(fail);
    });
    req.on('aborted', () =>
      fail(new AppError('UPLOAD_ABORTED', { message: 'The upload was aborted before it completed.' })),
    );
    res.on('close', () => {
      if (!res.writableFinished && !settled)
        fail(new AppError('UPLOAD_ABORTED', { message: 'The client went away.' }));
    });
    req.pipe(parser);
  });
}
