import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { DeployApi } from './api.js';
import type { ManifestFile } from './hash.js';

export interface UploadPlan {
  /** One file per required hash (files with the same bytes upload once). */
  files: ManifestFile[];
  bytes: number;
}

/** The files whose bytes the server asked for, one per hash. */
export function planUploads(manifest: ManifestFile[], required: string[]): UploadPlan {
  const byHash = new Map<string, ManifestFile>();
  for (const file of manifest) if (!byHash.has(file.hash)) byHash.set(file.hash, file);
  const files: ManifestFile[] = [];
  for (const hash of required) {
    const file = byHash.get(hash);
    // The server only asks for hashes of the manifest it was sent.
    if (!file) throw new Error(`the server asked for ${hash}, which no file of this folder has`);
    files.push(file);
  }
  return { files, bytes: files.reduce((sum, f) => sum + f.size, 0) };
}

/**
 * PUTs each file of the plan with at most `concurrency` at once (each with its own retries, see
 * api.ts). The first failure that retries could not fix stops the others from starting and is thrown.
 */
export async function uploadAll(
  api: DeployApi,
  deployId: string,
  plan: UploadPlan,
  concurrency: number,
  onUploaded: (file: ManifestFile) => void,
): Promise<void> {
  let next = 0;
  let failed: unknown;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, plan.files.length) }, async () => {
      while (failed === undefined && next < plan.files.length) {
        const file = plan.files[next++]!;
        try {
          await api.put(
            `/api/v1/deploys/${deployId}/files/${file.hash}`,
            () => Readable.toWeb(createReadStream(file.absPath)) as ReadableStream<Uint8Array>,
            file.size,
          );
          onUploaded(file);
        } catch (err) {
          failed ??= err;
        }
      }
    }),
  );
  if (failed !== undefined) throw failed;
}
