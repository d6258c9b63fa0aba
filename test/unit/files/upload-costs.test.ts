import { describe, expect, it } from 'vitest';
import { blobUploadCost, jsonUploadCost, videoUploadCost } from '../../../src/files/upload-admission.js';

const MiB = 1024 * 1024;

describe('what an upload body may cost in memory', () => {
  it('a JSON upload: five times a body express.json reads, twice one the direct reader takes, express.json’s largest when chunked or encoded', () => {
    expect(jsonUploadCost(10_000)).toBe(50_000);
    expect(jsonUploadCost(8 * MiB, true)).toBe(16 * MiB);
    // A large body the direct reader does not take (another Content-Type): express.json's five times.
    expect(jsonUploadCost(8 * MiB)).toBe(40 * MiB);
    expect(jsonUploadCost(undefined)).toBe(75 * MiB);
  });

  it('a video streams: at most the blob store’s two parts', () => {
    expect(videoUploadCost(1000)).toBe(1000);
    expect(videoUploadCost(50 * MiB)).toBe(16 * MiB);
    expect(videoUploadCost(undefined)).toBe(16 * MiB);
  });

  it('a deploy blob: twice when read whole (up to 10 MB), streamed above', () => {
    expect(blobUploadCost(1000)).toBe(2000);
    expect(blobUploadCost(10 * MiB)).toBe(20 * MiB);
    expect(blobUploadCost(40 * MiB)).toBe(16 * MiB);
    expect(blobUploadCost(undefined)).toBe(20 * MiB);
  });
});
