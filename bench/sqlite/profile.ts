// Where a profiled server's time went: `node --cpu-prof` writes one .cpuprofile per thread (the
// main thread and each SQLite worker); this sums self time by package/domain and by function.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A bounded name for where a frame's code lives: an npm package, a Hostplane domain, Node itself. */
function place(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const domain = /dist\/src\/([^/]+)/.exec(url);
  if (domain) return `hostplane:${domain[1]}`;
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  return path.basename(url);
}

function add(map: Map<string, number>, key: string, ms: number) {
  map.set(key, (map.get(key) ?? 0) + ms);
}

const top = (map: Map<string, number>, total: number, n: number) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([key, ms]) => `    ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${key}`)
    .join('\n');

/** A text summary of every .cpuprofile in `dir` (one section per thread). */
export async function summarizeProfiles(dir: string): Promise<string> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile')).sort();
  const sections: string[] = [];
  for (const file of files) {
    const profile = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as CpuProfile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const byPlace = new Map<string, number>();
    const byFunction = new Map<string, number>();
    let total = 0;
    // Self time: each sample's delta goes to the frame on top of the stack at that sample.
    profile.samples.forEach((id, i) => {
      const node = byId.get(id);
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      if (!node) return;
      const { functionName, url, lineNumber } = node.callFrame;
      if (functionName === '(idle)') return;
      total += ms;
      add(byPlace, place(url, functionName), ms);
      add(
        byFunction,
        `${functionName || '(anonymous)'} ${url ? `${place(url, functionName)}:${lineNumber + 1}` : ''}`,
        ms,
      );
    });
    const wall = (profile.endTime - profile.startTime) / 1e6;
    sections.push(
      `  ${file}: ${(total / 1000).toFixed(1)} s busy of ${wall.toFixed(1)} s\n` +
        `   by place:\n${top(byPlace, total, 12)}\n   by function (self time):\n${top(byFunction, total, 15)}`,
    );
  }
  return sections.join('\n');
}
