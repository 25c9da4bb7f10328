// Reading the Dockerfiles of docker/ and their build contexts, for
// tests/deploy/container.test.mjs (no container engine here, so the test carries out what
// the instructions say itself; see sandbox.mjs).
//
//   parseDockerfile(text)      -> [{ name, from: {image, tag, digest}, steps: [...] }]
//                                 steps: {op: 'workdir'|'copy'|'run'|'env'|..., ...}
//   dockerignore(text)         -> (relPath) => excluded?  (BuildKit's rules, see below)
//   buildContext(dir, ignore)  -> the context's files, relative paths, sorted
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { DOCKER } from './deploy.mjs';

const require = createRequire(path.join(DOCKER, 'package.json'));
// Resolved from docker/node_modules (npm ci in docker/, done by the test).
export const dockerfileAst = () => require('dockerfile-ast');
export const dockerfileUtils = () => require('dockerfile-utils');

export function parseDockerfile(text) {
  const { DockerfileParser } = dockerfileAst();
  const stages = [];
  let stage = null;
  for (const i of DockerfileParser.parse(text).getInstructions()) {
    const k = i.getKeyword();
    const args = i.getArguments().map((a) => a.getValue());
    const content = i.getArgumentsContent() ?? '';
    const json = () => JSON.parse(content.replace(/^\s*(CMD|NONE)\s*/, '').replace(/\\\n/g, ''));
    if (k === 'FROM') {
      stage = { name: i.getBuildStage(), from: { image: i.getImageName(), tag: i.getImageTag(), digest: i.getImageDigest() }, steps: [] };
      stages.push(stage);
      continue;
    }
    if (!stage) throw new Error(`${k} before FROM`);
    switch (k) {
      case 'WORKDIR': stage.steps.push({ op: 'workdir', path: args[0] }); break;
      case 'COPY': {
        const flags = Object.fromEntries(i.getFlags().map((f) => [f.getName(), f.getValue()]));
        const paths = args.filter((a) => !a.startsWith('--'));
        stage.steps.push({ op: 'copy', from: flags.from ?? null, flags, sources: paths.slice(0, -1), dest: paths.at(-1) });
        break;
      }
      case 'RUN': stage.steps.push({ op: 'run', exec: content.trim().startsWith('[') ? JSON.parse(content) : null, shell: content.replace(/\\\n/g, ' ').trim() }); break;
      case 'ENV': stage.steps.push({ op: 'env', vars: i.getProperties().map((p) => [p.getName(), p.getValue()]) }); break;
      case 'LABEL': stage.steps.push({ op: 'label', vars: i.getProperties().map((p) => [p.getName(), p.getValue()]) }); break;
      case 'VOLUME': stage.steps.push({ op: 'volume', paths: content.trim().startsWith('[') ? JSON.parse(content) : args }); break;
      case 'USER': stage.steps.push({ op: 'user', user: args[0] }); break;
      case 'EXPOSE': stage.steps.push({ op: 'expose', ports: args }); break;
      case 'STOPSIGNAL': stage.steps.push({ op: 'stopsignal', signal: args[0] }); break;
      case 'HEALTHCHECK': stage.steps.push({
        op: 'healthcheck',
        flags: Object.fromEntries(i.getFlags().map((f) => [f.getName(), f.getValue()])),
        cmd: json(),
      }); break;
      case 'ENTRYPOINT': stage.steps.push({ op: 'entrypoint', exec: JSON.parse(content) }); break;
      case 'CMD': stage.steps.push({ op: 'cmd', exec: JSON.parse(content) }); break;
      default: throw new Error(`tests/deploy does not know what ${k} does: teach lib/dockerfile.mjs and sandbox.mjs`);
    }
  }
  return stages;
}

// The image configuration a stage ends with (what `docker inspect` would show).
export function imageConfig(stage) {
  const c = { env: {}, labels: {}, workdir: '/', user: 'root', volumes: [], expose: [], stopsignal: 'SIGTERM', healthcheck: null, entrypoint: null, cmd: null };
  for (const s of stage.steps) {
    if (s.op === 'env') Object.assign(c.env, Object.fromEntries(s.vars));
    if (s.op === 'label') Object.assign(c.labels, Object.fromEntries(s.vars));
    if (s.op === 'workdir') c.workdir = path.posix.resolve(c.workdir, s.path);
    if (s.op === 'user') c.user = s.user;
    if (s.op === 'volume') c.volumes.push(...s.paths);
    if (s.op === 'expose') c.expose.push(...s.ports);
    if (s.op === 'stopsignal') c.stopsignal = s.signal;
    if (s.op === 'healthcheck') c.healthcheck = { ...s.flags, cmd: s.cmd };
    if (s.op === 'entrypoint') c.entrypoint = s.exec;
    if (s.op === 'cmd') c.cmd = s.exec;
  }
  return c;
}

// .dockerignore as BuildKit reads it (moby/patternmatcher): one pattern a line, '#'
// comments, a leading '/' ignored, '*' and '?' within a path segment, '**' across any
// number of them, '!' re-includes; the last pattern that matches a path or one of its
// parent directories decides.
export function dockerignore(text) {
  const rules = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((l) => {
    const negate = l.startsWith('!');
    let p = path.posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, '')).replace(/\/+$/, '');
    let re = '';
    for (let i = 0; i < p.length; i++) {
      const ch = p[i];
      if (ch === '*' && p[i + 1] === '*') {
        i++;
        if (p[i + 1] === '/') { i++; re += '(?:.*/)?'; } else re += '.*';
      } else if (ch === '*') re += '[^/]*';
      else if (ch === '?') re += '[^/]';
      else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
    return { negate, re: new RegExp(`^${re}$`) };
  });
  const excluded = (rel) => {
    const parts = rel.split('/');
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let out = false;
    for (const r of rules) if (prefixes.some((p) => r.re.test(p))) out = !r.negate;
    return out;
  };
  excluded.prunable = !rules.some((r) => r.negate); // an excluded directory holds nothing included
  return excluded;
}

export function buildContext(dir, excluded) {
  const out = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!(excluded.prunable && excluded(r))) walk(r);
      } else if (!excluded(r)) out.push(r);
    }
  };
  walk('');
  return out.sort();
}
