import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Two recipes make the Hostplane image: deploy/Dockerfile (users with Docker) and
// deploy/image/build.sh from deploy/image/recipe.json (CI and the real-node test, no Docker). This
// reads both and fails when what the image runs, as whom, where and from what drifts apart.

interface Recipe {
  debian: { suite: string };
  node: { major: number };
  user: { uid: number; gid: number; name: string; home: string; shell: string };
  workdir: string;
  env: Record<string, string>;
  expose: string[];
  entrypoint: string[];
  cmd: string[];
  layers: { deps: string[]; app: string[] };
  litestream: { binary: string; caBundle: string };
}

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions, stage by stage (continuations joined, comments dropped). */
function dockerfileStages(text: string): { args: Map<string, string>; stages: Instruction[][] } {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    logical.push(pending + line);
    pending = '';
  }
  const args = new Map<string, string>();
  const stages: Instruction[][] = [];
  for (const line of logical) {
    const space = line.indexOf(' ');
    const keyword = line.slice(0, space).toUpperCase();
    const rest = line.slice(space + 1).trim();
    if (keyword === 'ARG' && stages.length === 0) {
      const [name, value = ''] = rest.split('=');
      args.set(name!, value);
    } else if (keyword === 'FROM') {
      stages.push([{ keyword, args: rest }]);
    } else {
      stages.at(-1)?.push({ keyword, args: rest });
    }
  }
  return { args, stages };
}

/** What the Dockerfile's last stage (the runtime) declares, in the recipe's terms. */
function runtimeOf(text: string) {
  const { args, stages } = dockerfileStages(text);
  const runtime = stages.at(-1) ?? [];
  const all = (keyword: string) => runtime.filter((i) => i.keyword === keyword).map((i) => i.args);
  const one = (keyword: string) => {
    const found = all(keyword);
    if (found.length !== 1) throw new Error(`the runtime stage has ${found.length} ${keyword} instructions`);
    return found[0]!;
  };
  const from = runtime[0]!.args.replace(/\$\{(\w+)\}/g, (_, name: string) => args.get(name) ?? '');
  const tagged = /^node:(\d+)-(\w+)-slim$/.exec(from);
  if (!tagged) throw new Error(`unexpected runtime base image: ${from}`);
  const env: Record<string, string> = {};
  for (const line of all('ENV')) {
    for (const pair of line.split(/\s+/)) {
      const eq = pair.indexOf('=');
      env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  const run = all('RUN').join(' ');
  const option = (name: string) => new RegExp(`--${name}[ =](\\S+)`).exec(run)?.[1];
  const workdir = one('WORKDIR');
  const copies = all('COPY').flatMap((line) => {
    const words = line.split(/\s+/);
    const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length) ?? 'context';
    const dest = words.at(-1)!.replace(/^\.\//, '').replace(/\/$/, '');
    const sources = words.filter((w) => !w.startsWith('--')).slice(0, -1);
    // `COPY package.json ./` keeps the sources' names.
    const paths = dest === '' || dest === '.' ? sources : [dest];
    return paths.map((p) => ({ from, path: p }));
  });
  return {
    nodeMajor: Number(tagged[1]),
    suite: tagged[2]!,
    env,
    workdir,
    user: one('USER'),
    groupadd: { gid: option('gid') },
    useradd: { uid: option('uid'), gid: option('gid'), home: option('home-dir'), shell: option('shell') },
    userName: /useradd .* (\S+)$/.exec(run)?.[1],
    expose: one('EXPOSE')
      .split(/\s+/)
      .map((p) => (p.includes('/') ? p : `${p}/tcp`)),
    entrypoint: JSON.parse(one('ENTRYPOINT')) as string[],
    cmd: JSON.parse(one('CMD')) as string[],
    copies,
  };
}

const read = (file: string) => readFileSync(file, 'utf8');
const recipe = JSON.parse(read('deploy/image/recipe.json')) as Recipe;
const docker = runtimeOf(read('deploy/Dockerfile'));

describe('deploy/Dockerfile and the Docker-free recipe (deploy/image/recipe.json) agree', () => {
  it('on the base: Debian suite and Node major, also the one scripts/node.sh pins', () => {
    expect(recipe.debian.suite).toBe(docker.suite);
    expect(recipe.node.major).toBe(docker.nodeMajor);
    const pinned = /^NODE_VERSION=(\d+)\./m.exec(read('scripts/node.sh'))?.[1];
    expect(Number(pinned)).toBe(recipe.node.major);
  });

  it('on the user: UID/GID, name, home and shell', () => {
    expect(docker.user).toBe(`${recipe.user.uid}:${recipe.user.gid}`);
    expect(docker.groupadd.gid).toBe(String(recipe.user.gid));
    expect(docker.useradd).toEqual({
      uid: String(recipe.user.uid),
      gid: String(recipe.user.gid),
      home: recipe.user.home,
      shell: recipe.user.shell,
    });
    expect(docker.userName).toBe(recipe.user.name);
  });

  it('on the process: working directory, environment, entrypoint, command and port', () => {
    expect(docker.workdir).toBe(recipe.workdir);
    expect(docker.env).toEqual(recipe.env);
    expect(docker.entrypoint).toEqual(recipe.entrypoint);
    expect(docker.cmd).toEqual(recipe.cmd);
    expect(docker.expose).toEqual(recipe.expose);
  });

  it('on what is copied: node_modules from the production install, the build output and package.json', () => {
    const fromDeps = docker.copies.filter((c) => c.from === 'deps').map((c) => c.path);
    const rest = docker.copies.filter((c) => c.from !== 'deps').map((c) => c.path);
    expect(fromDeps.sort()).toEqual([...recipe.layers.deps].sort());
    expect(rest.sort()).toEqual([...recipe.layers.app].sort());
  });

  it('on the chart: its UID, and where its init container finds Litestream and the CA bundle', () => {
    const values = parse(read('charts/hostplane/values.yaml')) as {
      podSecurityContext: { runAsUser: number; runAsGroup: number };
      sqlite: { litestream: { binaryPath: string; caBundlePath: string } };
    };
    expect(values.podSecurityContext).toMatchObject({
      runAsUser: recipe.user.uid,
      runAsGroup: recipe.user.gid,
    });
    expect(values.sqlite.litestream.binaryPath).toBe(recipe.litestream.binary);
    expect(values.sqlite.litestream.caBundlePath).toBe(recipe.litestream.caBundle);
  });

  it('parses a drifted Dockerfile as drifted (the parser itself)', () => {
    const drifted = runtimeOf(
      read('deploy/Dockerfile')
        .replace('USER 10001:10001', 'USER 10002:10002')
        .replace('PORT=8080', 'PORT=9000'),
    );
    expect(drifted.user).not.toBe(`${recipe.user.uid}:${recipe.user.gid}`);
    expect(drifted.env).not.toEqual(recipe.env);
  });
});
