// The container deployment: docker/Dockerfile, docker/proxy.Dockerfile,
// docker/postgres.Dockerfile, docker/compose.yaml (its default profile and its profile
// `postgres`).
//
// No container engine runs here or in CI (the docker CLI is only a client), so:
//  - the files are linted: dockerfile-utils for the Dockerfiles, the compose-spec JSON
//    schema (as shipped in dclint 2) with ajv, and dclint, for compose.yaml; shellcheck for
//    the scripts the images run; and what the files say about each other is compared
//    (addresses, ports, paths, users, signals, limits);
//  - the Dockerfiles are carried out by the test in a throwaway root (lib/sandbox.mjs):
//    an overlay over this machine's Debian 12 root, in private namespaces, so every RUN
//    step's script (scripts/setup.sh, scripts/build.sh, docker/install-runtime.sh,
//    docker/install-proxy.sh) runs for real outside a container, and nothing it does
//    stays on the machine;
//  - the images so made are run as compose.yaml runs them (user, read-only root, volume,
//    tmpfs, capabilities, no-new-privileges, environment, health checks, stop signals),
//    each in its own network namespace joined by bridges with compose.yaml's addresses,
//    and requests go through the proxy to memoryd: the default profile (one memoryd on
//    SQLite), and the profile postgres (PostgreSQL's first start by its entrypoint, two
//    memoryd on it, the proxy spreading requests over both and passing them to the one
//    left when the other stops).
// What this does not cover: the real debian:12-slim (this machine's root has more in it;
// the libraries memoryd needs are checked against install-runtime.sh instead), BuildKit
// and the Docker engine themselves, port publishing, and Docker's DNS.
//
// The sandbox tests need root, unshare and overlayfs (CI has them). They do not depend on
// which memoryd build ctest gives (they build their own), so they run in the plain build.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { tempDir } from '../lib/server.mjs';
import { DOCKER, REPO, readDocker, run } from './lib/deploy.mjs';
import { buildContext, dockerfileUtils, dockerignore, imageConfig, parseDockerfile } from './lib/dockerfile.mjs';
import { buildImage, container, inNamespaces, mountRoot, sh } from './lib/sandbox.mjs';

const sanitized = process.env.MD_SANITIZE === '1' || process.env.MD_SANITIZE === 'ON';
const skipSandbox = sanitized && 'sanitizer build: these tests build their own memoryd (run in the plain build)';
const dir = tempDir('memoryd-container-');
fs.chmodSync(dir, 0o755);

let YAML, Ajv2019, addFormats;
before(async () => {
  // docker/package.json: the linters, pinned in docker/package-lock.json.
  const lock = path.join(DOCKER, 'package-lock.json');
  const installed = path.join(DOCKER, 'node_modules', '.package-lock.json');
  if (!fs.existsSync(installed) || fs.statSync(installed).mtimeMs < fs.statSync(lock).mtimeMs) {
    const r = await run('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: DOCKER });
    assert.equal(r.code, 0, `npm ci in docker/ failed:\n${r.stdout}${r.stderr}`);
  }
  const req = (await import('node:module')).createRequire(path.join(DOCKER, 'package.json'));
  YAML = req('yaml');
  Ajv2019 = req('ajv/dist/2019').default;
  addFormats = req('ajv-formats').default;
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const memorydStages = () => parseDockerfile(readDocker('Dockerfile'));
const proxyStages = () => parseDockerfile(readDocker('proxy.Dockerfile'));
const postgresStages = () => parseDockerfile(readDocker('postgres.Dockerfile'));
const compose = () => YAML.parse(readDocker('compose.yaml'));

// ---- lint ----

const ALL_RULES_ERROR = () => {
  const { ValidationSeverity } = dockerfileUtils();
  return Object.fromEntries(['deprecatedMaintainer', 'directiveCasing', 'emptyContinuationLine', 'instructionCasing',
    'instructionCmdMultiple', 'instructionEntrypointMultiple', 'instructionHealthcheckMultiple',
    'instructionJSONInSingleQuotes', 'instructionWorkdirRelative'].map((k) => [k, ValidationSeverity.ERROR]));
};

test('the Dockerfiles lint clean with dockerfile-utils, every rule an error (and a bad one does not)', () => {
  const { validate } = dockerfileUtils();
  for (const f of ['Dockerfile', 'proxy.Dockerfile', 'postgres.Dockerfile']) {
    assert.deepEqual(validate(readDocker(f), ALL_RULES_ERROR()).map((d) => `${d.range.start.line + 1}: ${d.message}`), [], f);
  }
  const bad = 'from debian:12-slim\nMAINTAINER x\nWORKDIR relative\nCMD ["a"]\nCMD [\'b\']\n';
  assert.deepEqual(validate(bad, ALL_RULES_ERROR()).map((d) => d.range.start.line + 1).sort(), [1, 2, 3, 4, 5]);
});

// The scripts a RUN step may call: each is run outside a container by a test below.
const RUN_SCRIPTS = ['scripts/setup.sh', 'scripts/build.sh', '/usr/local/lib/memoryd/install-runtime.sh', '/usr/local/lib/memoryd/install-proxy.sh',
  '/usr/local/lib/memoryd/install-postgres.sh'];

test('the Dockerfiles: debian:12-slim by tag, every RUN a tested script, non-root memoryd, health checks, signals', () => {
  const [build, runtime] = memorydStages();
  const [proxy] = proxyStages();
  const [postgres] = postgresStages();
  for (const s of [build, runtime, proxy, postgres]) assert.deepEqual(s.from, { image: 'debian', tag: '12-slim', digest: null });
  assert.deepEqual([build.name, runtime.name, memorydStages().length, proxyStages().length, postgresStages().length], ['build', 'runtime', 2, 1, 1]);
  for (const s of [build, runtime, proxy, postgres]) {
    for (const step of s.steps.filter((x) => x.op === 'run')) {
      const commands = step.shell.split('&&').map((c) => c.trim().split(/\s+/)[0]);
      for (const c of commands) assert.ok(RUN_SCRIPTS.includes(c), `RUN ${step.shell}: ${c} is not one of the tested scripts`);
    }
  }
  // The build stage is the README's: the whole tree, scripts/setup.sh, scripts/build.sh
  // (whose plain build goes to build/), and the binary taken from there.
  assert.deepEqual(build.steps, [
    { op: 'workdir', path: '/src' },
    { op: 'copy', from: null, flags: {}, sources: ['.'], dest: '.' },
    { op: 'run', exec: null, shell: 'scripts/setup.sh && scripts/build.sh' },
  ]);
  assert.match(fs.readFileSync(path.join(REPO, 'scripts/build.sh'), 'utf8'), /^dir=build$/m);
  assert.deepEqual(runtime.steps.filter((x) => x.op === 'copy' || x.op === 'run'), [
    { op: 'copy', from: null, flags: {}, sources: ['docker/install-runtime.sh', 'docker/healthcheck.sh'], dest: '/usr/local/lib/memoryd/' },
    { op: 'run', exec: null, shell: '/usr/local/lib/memoryd/install-runtime.sh --uid 10001 --clean-apt' },
    { op: 'copy', from: 'build', flags: { from: 'build' }, sources: ['/src/build/memoryd'], dest: '/usr/local/bin/memoryd' },
  ]);
  const c = imageConfig(runtime);
  assert.deepEqual(c.env, {
    MEMORYD_LISTEN: '0.0.0.0', MEMORYD_PORT: '8080', MEMORYD_DB: '/var/lib/memoryd/memoryd.db', MEMORYD_SHUTDOWN_TIMEOUT: '8',
  });
  assert.deepEqual([c.user, c.volumes, c.workdir, c.expose, c.stopsignal, c.entrypoint, c.cmd],
    ['10001:10001', ['/var/lib/memoryd'], '/var/lib/memoryd', ['8080'], 'SIGTERM', ['/usr/local/bin/memoryd'], null]);
  assert.equal(path.posix.dirname(c.env.MEMORYD_DB), c.volumes[0], 'the database is on the volume');
  assert.deepEqual(c.healthcheck, { interval: '10s', timeout: '3s', 'start-period': '10s', retries: '3', cmd: ['/usr/local/lib/memoryd/healthcheck.sh'] });
  // docker stop waits 10 s by default: shutdown (in-flight requests, then a checkpoint) must fit.
  assert.ok(Number(c.env.MEMORYD_SHUTDOWN_TIMEOUT) < 10);

  const p = imageConfig(proxy);
  assert.deepEqual([p.user, p.expose, p.stopsignal, p.entrypoint, p.cmd],
    ['root', ['8080'], 'SIGQUIT', null, ['nginx', '-g', 'daemon off;']]);
  assert.deepEqual(p.healthcheck, { interval: '10s', timeout: '3s', 'start-period': '5s', retries: '3', cmd: ['/usr/local/lib/memoryd/healthcheck.sh', '127.0.0.1', '8080'] });
  assert.deepEqual(proxy.steps.filter((x) => x.op === 'copy' || x.op === 'run'), [
    { op: 'copy', from: null, flags: {}, sources: ['install-proxy.sh', 'healthcheck.sh'], dest: '/usr/local/lib/memoryd/' },
    { op: 'run', exec: null, shell: '/usr/local/lib/memoryd/install-proxy.sh --container-logs --clean-apt' },
    { op: 'copy', from: null, flags: {}, sources: ['nginx.conf'], dest: '/etc/nginx/nginx.conf' },
  ]);
  // PostgreSQL: Debian's postgresql-15 installed by install-postgres.sh, the entrypoint
  // that makes the cluster on the first start, run as postgres, its data on the volume,
  // PostgreSQL's fast shutdown on stop, healthy once it answers on TCP.
  assert.deepEqual(postgres.steps.filter((x) => x.op === 'copy' || x.op === 'run'), [
    { op: 'copy', from: null, flags: {}, sources: ['install-postgres.sh', 'postgres-entrypoint.sh'], dest: '/usr/local/lib/memoryd/' },
    { op: 'run', exec: null, shell: '/usr/local/lib/memoryd/install-postgres.sh --clean-apt' },
  ]);
  const g = imageConfig(postgres);
  assert.deepEqual([g.env, g.user, g.volumes, g.workdir, g.expose, g.stopsignal, g.entrypoint, g.cmd], [
    { PGDATA: '/var/lib/postgresql/data' }, 'postgres', ['/var/lib/postgresql/data'], '/var/lib/postgresql', ['5432'], 'SIGINT',
    ['/usr/local/lib/memoryd/postgres-entrypoint.sh'], null]);
  assert.deepEqual(g.healthcheck, { interval: '5s', timeout: '3s', 'start-period': '60s', retries: '3',
    cmd: ['/usr/lib/postgresql/15/bin/pg_isready', '-q', '-h', '127.0.0.1', '-p', '5432'] });
  assert.match(readDocker('postgres-entrypoint.sh'), /\ndata=\$\{PGDATA:\?PGDATA is not set\}\n/);
  // The digest approach is written down where the tag is.
  for (const f of ['Dockerfile', 'proxy.Dockerfile', 'postgres.Dockerfile']) assert.match(readDocker(f), /pin (its|the)\s+(# )?digest/);
});

test('the build contexts: nothing git ignores goes in, everything git tracks does', async () => {
  const files = buildContext(REPO, dockerignore(readDocker('Dockerfile.dockerignore')));
  const tracked = (await run('git', ['-C', REPO, 'ls-files', '-z'])).stdout.split('\0').filter(Boolean)
    .filter((f) => fs.existsSync(path.join(REPO, f)));
  assert.deepEqual(tracked.filter((f) => !files.includes(f)), [], 'tracked files left out of the context');
  const ignored = await run('git', ['-C', REPO, 'check-ignore', '--no-index', '--stdin'], { input: files.join('\n') + '\n' });
  assert.deepEqual(ignored.stdout.split('\n').filter(Boolean), [], 'files in the context that git ignores');
  assert.ok(!files.some((f) => f.startsWith('.git/')));
  // The proxy's context (docker/) holds only what proxy.Dockerfile copies: no keys.
  assert.deepEqual(buildContext(DOCKER, dockerignore(readDocker('proxy.Dockerfile.dockerignore'))),
    ['healthcheck.sh', 'install-proxy.sh', 'nginx.conf']);
  assert.deepEqual(buildContext(DOCKER, dockerignore(readDocker('postgres.Dockerfile.dockerignore'))),
    ['install-postgres.sh', 'postgres-entrypoint.sh']);
  // A password in docker/.env (the postgres profile) goes into no context, nor into git.
  assert.ok(dockerignore(readDocker('Dockerfile.dockerignore'))('docker/.env'));
  assert.ok(dockerignore(readDocker('proxy.Dockerfile.dockerignore'))('.env'));
  assert.ok(dockerignore(readDocker('postgres.Dockerfile.dockerignore'))('.env'));
  assert.equal((await run('git', ['-C', REPO, 'check-ignore', '--no-index', 'docker/.env'])).stdout, 'docker/.env\n');
});

function composeValidator() {
  // The compose-spec schema (compose-spec/compose-spec, schema/compose-spec.json) as
  // dclint 2 ships it: draft 2019-09, with draft-04 style `id` keywords, which ajv refuses
  // and which are dropped here as dclint itself drops them before validating.
  const schema = JSON.parse(fs.readFileSync(path.join(DOCKER, 'node_modules/dclint/schemas/compose.schema.json'), 'utf8'));
  assert.equal(schema.$schema, 'https://json-schema.org/draft/2019-09/schema#');
  assert.equal(schema.title, 'Compose Specification');
  const dropIds = (node) => {
    if (node === null || typeof node !== 'object') return;
    delete node.id;
    Object.values(node).forEach(dropIds);
  };
  dropIds(schema);
  const ajv = new Ajv2019({ allErrors: true, strictSchema: false, strictTypes: false, allowUnionTypes: true, logger: false });
  addFormats(ajv);
  return ajv.compile(schema);
}

test('compose.yaml is valid against the compose-spec JSON schema (and broken copies are not)', () => {
  const validate = composeValidator();
  const doc = compose();
  assert.equal(validate(doc), true, JSON.stringify(validate.errors, null, 2));
  const broken = [
    [(d) => { d.servics = d.services; }, ['', 'must NOT have additional properties']],
    [(d) => { d.services.memoryd.ports = 8080; }, ['/services/memoryd/ports', 'must be array']],
    [(d) => { d.services.proxy.depends_on.memoryd.condition = 'service_ready'; }, ['/services/proxy/depends_on/memoryd/condition', 'must be equal to one of the allowed values']],
    [(d) => { d.services.memoryd.stop_grace_period = 20; }, ['/services/memoryd/stop_grace_period', 'must be string']],
    [(d) => { d.services.proxy.networks.backend.ipv4_addres = d.services.proxy.networks.backend.ipv4_address; }, ['/services/proxy/networks/backend', 'must NOT have additional properties']],
    [(d) => { d.services.memoryd.cap_drop.push('ALL'); }, ['/services/memoryd/cap_drop', 'must NOT have duplicate items (items ## 1 and 0 are identical)']],
    [(d) => { d.services.postgres.profiles = 'postgres'; }, ['/services/postgres/profiles', 'must be array']],
    [(d) => { d.services['proxy-pg'].extra_hosts.push('memoryd:172.30.77.21'); }, ['/services/proxy-pg/extra_hosts', 'must NOT have duplicate items (items ## 2 and 0 are identical)']],
  ];
  for (const [mutate, [at, message]] of broken) {
    const d = structuredClone(doc);
    mutate(d);
    assert.equal(validate(d), false);
    assert.ok(validate.errors.some((e) => e.instancePath === at && e.message === message), JSON.stringify(validate.errors.map((e) => [e.instancePath, e.message])));
  }
});

test('compose.yaml passes dclint with every default rule (one line excepted from one rule, and only that)', async () => {
  const r = await run(path.join(DOCKER, 'node_modules/.bin/dclint'), ['-f', 'json', 'compose.yaml'], { cwd: DOCKER });
  const report = JSON.parse(r.stdout);
  assert.deepEqual([r.code, report.map((f) => [f.filePath, f.messages])], [0, [['compose.yaml', []]]]);
  // The exception: proxy-pg publishes the port of proxy, its alternative (never up with it).
  const text = readDocker('compose.yaml');
  assert.deepEqual(text.match(/^\s*#\s*dclint\s+disable.*$/gm), ['    # dclint disable-line no-duplicate-exported-ports']);
  // Without it, dclint reports exactly that.
  const copy = path.join(dir, 'compose-no-exception.yaml');
  fs.writeFileSync(copy, text.replace('    # dclint disable-line no-duplicate-exported-ports\n', ''));
  const r2 = await run(path.join(DOCKER, 'node_modules/.bin/dclint'), ['-f', 'json', copy], { cwd: DOCKER });
  assert.deepEqual([r2.code, JSON.parse(r2.stdout)[0].messages.map((m) => [m.rule, m.message])], [1, [
    ['no-duplicate-exported-ports', 'Service "proxy-pg" is exporting port "8080" which is already used by service "proxy".']]]);
});

test('compose.yaml, the Dockerfiles and nginx.conf agree on addresses, ports, paths and time limits', () => {
  const doc = compose();
  const conf = readDocker('nginx.conf');
  const memoryd = doc.services.memoryd;
  const proxy = doc.services.proxy;
  const image = imageConfig(memorydStages()[1]);
  const proxyAddress = proxy.networks.backend.ipv4_address;
  // memoryd trusts exactly the proxy's address, which nginx connects from.
  assert.equal(memoryd.environment.MEMORYD_TRUSTED_PROXIES, proxyAddress);
  assert.match(conf, new RegExp(`\\n        proxy_bind ${proxyAddress.replaceAll('.', '\\.')};\\n`));
  const [net, bits] = doc.networks.backend.ipam.config[0].subnet.split('/');
  assert.equal(bits, '24');
  assert.equal(proxyAddress.split('.').slice(0, 3).join('.'), net.split('.').slice(0, 3).join('.'), 'the proxy address is in the backend subnet');
  assert.equal(memoryd.environment.MEMORYD_REQUIRE_TENANT, 'true');
  // Metrics on a port of their own, on every address of the internal network; not published
  // (below) and not the public port.
  assert.equal(memoryd.environment.MEMORYD_METRICS_LISTEN, '0.0.0.0:9464');
  assert.notEqual(image.env.MEMORYD_PORT, '9464');
  // memoryd: on the internal network only, nothing published; the proxy: published on the
  // host's loopback at nginx's listen port; upstream = the memoryd service at its port.
  assert.deepEqual([memoryd.networks, memoryd.ports, doc.networks.backend.internal], [['backend'], undefined, true]);
  assert.deepEqual(proxy.ports, ['127.0.0.1:8080:8080']);
  assert.match(conf, /\n        listen 8080;\n/);
  assert.match(conf, new RegExp(`\\n        server memoryd:${image.env.MEMORYD_PORT};\\n`));
  assert.deepEqual(proxy.depends_on, { memoryd: { condition: 'service_healthy' } });
  // The database on the named volume, at the image's VOLUME.
  assert.deepEqual(memoryd.volumes, [`memoryd-data:${image.volumes[0]}`]);
  assert.deepEqual(doc.volumes, { 'memoryd-data': {}, 'postgres-data': {} });
  // The keys: mounted read-only where nginx.conf includes them (relative to /etc/nginx/,
  // the directory of the nginx.conf that proxy.Dockerfile installs).
  assert.match(conf, /\n        include tenants\.map;\n/);
  assert.deepEqual(proxy.volumes, ['./tenants.map:/etc/nginx/tenants.map:ro']);
  // Body limit: nginx's equals memoryd's default --max-body (4M), which compose keeps.
  assert.match(conf, /\n        client_max_body_size 4m;\n/);
  assert.equal(memoryd.environment.MEMORYD_MAX_BODY, undefined);
  // Stopping: compose waits longer than memoryd's shutdown timeout.
  const seconds = (s) => Number(/^(\d+)s$/.exec(s)[1]);
  assert.ok(seconds(memoryd.stop_grace_period) > Number(image.env.MEMORYD_SHUTDOWN_TIMEOUT) + 5);
  // nginx keeps upstream connections for less than memoryd's --connection-timeout (30 s).
  assert.ok(seconds(/\n        keepalive_timeout (\d+s);\n/.exec(conf)[1]) < 30);
  // Hardening.
  for (const s of [memoryd, proxy]) {
    assert.deepEqual([s.read_only, s.cap_drop, s.security_opt, s.restart], [true, ['ALL'], ['no-new-privileges:true'], 'unless-stopped']);
  }
  assert.deepEqual([memoryd.cap_add, proxy.cap_add, memoryd.tmpfs, proxy.tmpfs], [undefined, ['CHOWN', 'SETGID', 'SETUID'], ['/tmp'], ['/run', '/var/lib/nginx']]);
  assert.deepEqual(memoryd.build, { context: '..', dockerfile: 'docker/Dockerfile' });
  assert.deepEqual(proxy.build, { context: '.', dockerfile: 'proxy.Dockerfile' });
});

// compose's interpolation of `text` (a value of compose.yaml) from the variables `vars`
// (docker/.env): ${NAME:-default} and ${NAME}, the only forms compose.yaml uses.
function interpolate(text, vars) {
  return text.replace(/\$\{([A-Z_]+)(?::-([^}]*))?\}/g, (_, name, dflt) => vars[name] || (dflt ?? ''));
}

test('the postgres profile: its services, the default profile untouched, and what the files say about each other', () => {
  const doc = compose();
  const s = doc.services;
  const profiled = Object.keys(s).filter((n) => s[n].profiles);
  // The default profile is what it was: one memoryd on SQLite behind the proxy.
  assert.deepEqual(Object.keys(s).filter((n) => !s[n].profiles), ['memoryd', 'proxy']);
  assert.deepEqual(profiled, ['memoryd-pg-1', 'memoryd-pg-2', 'postgres', 'proxy-pg']);
  for (const n of profiled) assert.deepEqual(s[n].profiles, ['postgres'], n);
  const [p1, p2, pg, px] = profiled.map((n) => s[n]);
  // Two memoryd instances, the same but for their fixed addresses, built as the default's.
  const { networks: n1, ...rest1 } = p1;
  const { networks: n2, ...rest2 } = p2;
  assert.deepEqual(rest1, { ...rest2, environment: rest1.environment });
  assert.deepEqual(rest1.environment, rest2.environment);
  assert.deepEqual([p1.build, p1.cap_drop, p1.read_only, p1.security_opt, p1.restart, p1.stop_grace_period],
    [s.memoryd.build, ['ALL'], true, ['no-new-privileges:true'], 'unless-stopped', s.memoryd.stop_grace_period]);
  // Nothing of theirs on disk: the image's volume is a tmpfs, not an anonymous volume.
  const image = imageConfig(memorydStages()[1]);
  assert.deepEqual(p1.tmpfs, ['/tmp', ...image.volumes]);
  assert.deepEqual([p1.volumes, p1.ports], [undefined, undefined]);
  const addresses = [n1.backend.ipv4_address, n2.backend.ipv4_address];
  assert.deepEqual(addresses, ['172.30.77.21', '172.30.77.22']);
  // Fixed addresses in the subnet, below ip_range, from which Docker hands out the others.
  const { subnet, ip_range: range } = doc.networks.backend.ipam.config[0];
  assert.deepEqual([subnet, range], ['172.30.77.0/24', '172.30.77.128/25']);
  const last = (a) => Number(a.split('.')[3]);
  for (const a of [...addresses, px.networks.backend.ipv4_address]) {
    assert.ok(a.startsWith('172.30.77.') && last(a) > 1 && last(a) < 128, a);
  }
  // Their environment: the database the entrypoint makes, the password from docker/.env
  // (PGPASSWORD, read by libpq), the proxy's address, a tenant required.
  assert.deepEqual(p1.environment, {
    MEMORYD_DB: 'postgresql://memoryd@postgres:5432/memoryd', MEMORYD_METRICS_LISTEN: '0.0.0.0:9464', MEMORYD_REQUIRE_TENANT: 'true',
    MEMORYD_TRUSTED_PROXIES: px.networks.backend.ipv4_address, PGPASSWORD: '${MEMORYD_PG_PASSWORD:-}',
  });
  const entrypoint = readDocker('postgres-entrypoint.sh');
  assert.match(entrypoint, /\nCREATE ROLE memoryd LOGIN PASSWORD :'password';\nCREATE DATABASE memoryd OWNER memoryd ENCODING 'UTF8';\n/);
  assert.match(entrypoint, /\n\\getenv password MEMORYD_PG_PASSWORD\n/);
  assert.deepEqual(pg.environment, { MEMORYD_PG_PASSWORD: '${MEMORYD_PG_PASSWORD:-}' });
  assert.deepEqual(imageConfig(postgresStages()[0]).expose, ['5432']);
  // The password comes from docker/.env and nowhere else: without it, it is empty (the
  // entrypoint then refuses to start), and no other variable is interpolated anywhere.
  assert.deepEqual([...new Set(readDocker('compose.yaml').match(/\$\{[^}]*\}/g))], ['${MEMORYD_PG_PASSWORD:-}']);
  assert.equal(interpolate(p1.environment.PGPASSWORD, {}), '');
  assert.match(entrypoint, /\n  if \[\[ -z "\$\{MEMORYD_PG_PASSWORD:-\}" \]\]; then\n/);
  // PostgreSQL: built from docker/, its data on the named volume, on the internal network only.
  assert.deepEqual(pg.build, { context: '.', dockerfile: 'postgres.Dockerfile' });
  assert.deepEqual([pg.volumes, pg.networks, pg.ports], [[`postgres-data:${imageConfig(postgresStages()[0]).volumes[0]}`], ['backend'], undefined]);
  assert.deepEqual(pg.tmpfs, ['/run/postgresql', '/tmp']);
  // Start order: PostgreSQL healthy, then both memoryd healthy, then the proxy.
  for (const p of [p1, p2]) assert.deepEqual(p.depends_on, { postgres: { condition: 'service_healthy' } });
  assert.deepEqual(px.depends_on, { 'memoryd-pg-1': { condition: 'service_healthy' }, 'memoryd-pg-2': { condition: 'service_healthy' } });
  // Naming proxy-pg (as the documented command does) starts every service of the profile,
  // and none of the default one.
  const closure = (name, seen = new Set()) => {
    seen.add(name);
    for (const d of Object.keys(s[name].depends_on ?? {})) if (!seen.has(d)) closure(d, seen);
    return seen;
  };
  assert.deepEqual([...closure('proxy-pg')].sort(), profiled);
  const command = 'docker compose -f docker/compose.yaml --env-file docker/.env --profile postgres up -d --build proxy-pg';
  const dotenv = '(umask 077 && echo "MEMORYD_PG_PASSWORD=$(openssl rand -hex 32)" >docker/.env)';
  for (const f of ['compose.yaml', 'README.md']) {
    assert.ok(readDocker(f).includes(command), `${f} has the command`);
    assert.ok(readDocker(f).includes(dotenv), `${f} says how to make docker/.env`);
  }
  // The proxy: the default proxy's image, keys, port, address and hardening; nginx.conf's
  // `server memoryd:8080` names both instances, by two lines of its /etc/hosts.
  for (const k of ['build', 'volumes', 'ports', 'networks', 'cap_add', 'cap_drop', 'read_only', 'security_opt', 'restart', 'stop_grace_period', 'tmpfs']) {
    assert.deepEqual(px[k], s.proxy[k], k);
  }
  assert.deepEqual(px.extra_hosts, addresses.map((a) => `memoryd:${a}`));
  assert.match(readDocker('nginx.conf'), /\n        server memoryd:8080;\n/);
  // Hardening as the others; PostgreSQL gets longer to stop (a fast shutdown checkpoints).
  assert.deepEqual([pg.read_only, pg.cap_drop, pg.cap_add, pg.security_opt, pg.restart, pg.stop_grace_period],
    [true, ['ALL'], undefined, ['no-new-privileges:true'], 'unless-stopped', '60s']);
});

test('shellcheck: the scripts the images run are clean', async () => {
  const scripts = ['install-runtime.sh', 'install-proxy.sh', 'install-postgres.sh', 'postgres-entrypoint.sh', 'healthcheck.sh'];
  const r = await run('shellcheck', scripts, { cwd: DOCKER });
  assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', '']);
  for (const s of scripts) assert.ok(fs.statSync(path.join(DOCKER, s)).mode & 0o100, `${s} is executable`);
});

// ---- the scripts, outside a container ----

test('install-runtime.sh in a throwaway root: libraries, the user memoryd, its directory; idempotent; refuses a conflicting id', { skip: skipSandbox }, async () => {
  const root = path.join(dir, 'install-runtime');
  const script = path.join(DOCKER, 'install-runtime.sh');
  const m = `${root}/merged`;
  const r = await inNamespaces(`
${mountRoot({ layers: [], upper: `${root}/upper`, work: `${root}/work`, merged: m })}
install -D -m 0755 ${sh(script)} ${sh(`${m}/opt/install-runtime.sh`)}
rec() { local n=$1; shift; local rc=0; "$@" >${sh(root)}/$n.out 2>${sh(root)}/$n.err || rc=$?; echo $rc >${sh(root)}/$n.rc; }
rec first chroot ${sh(m)} /opt/install-runtime.sh --uid 10001
rec second chroot ${sh(m)} /opt/install-runtime.sh --uid 10001
rec conflict chroot ${sh(m)} /opt/install-runtime.sh --uid 10002
rec badarg chroot ${sh(m)} /opt/install-runtime.sh --uid x
rec passwd chroot ${sh(m)} getent passwd memoryd
rec group chroot ${sh(m)} getent group memoryd
rec dir stat -c '%u:%g %a' ${sh(`${m}/var/lib/memoryd`)}
rec libs chroot ${sh(m)} dpkg-query -W -f '\${Package} \${Status}\\n' libmicrohttpd12 libjansson4 libsqlite3-0
rec nonroot chroot ${sh(m)} setpriv --reuid=65534 --regid=65534 --clear-groups /opt/install-runtime.sh
`, { net: 'host' });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const get = (n) => ({ rc: Number(fs.readFileSync(`${root}/${n}.rc`, 'utf8')), out: fs.readFileSync(`${root}/${n}.out`, 'utf8'), err: fs.readFileSync(`${root}/${n}.err`, 'utf8') });
  assert.deepEqual(get('first'), { rc: 0, out: '', err: 'install-runtime: created user memoryd (uid=10001(memoryd) gid=10001(memoryd) groups=10001(memoryd))\n' });
  assert.deepEqual(get('second'), { rc: 0, out: '', err: '' });
  assert.deepEqual(get('conflict'), { rc: 1, out: '', err: 'install-runtime: user memoryd exists with uid 10001, not 10002\n' });
  assert.deepEqual(get('badarg'), { rc: 2, out: '', err: 'install-runtime: --uid needs a number\n' });
  assert.deepEqual(get('passwd'), { rc: 0, out: 'memoryd:x:10001:10001:memoryd:/var/lib/memoryd:/usr/sbin/nologin\n', err: '' });
  assert.deepEqual(get('group'), { rc: 0, out: 'memoryd:x:10001:\n', err: '' });
  assert.deepEqual(get('dir'), { rc: 0, out: '10001:10001 750\n', err: '' });
  assert.deepEqual(get('libs'), { rc: 0, out: 'libjansson4 install ok installed\nlibmicrohttpd12 install ok installed\nlibsqlite3-0 install ok installed\n', err: '' });
  assert.deepEqual(get('nonroot'), { rc: 1, out: '', err: 'install-runtime: run as root\n' });
  // Nothing of it on this machine.
  assert.equal((await run('getent', ['passwd', 'memoryd'])).stdout.includes(':10001:'), false);
});

// ---- the images, built and run without an engine ----

let imagesPromise = null;
function images() {
  imagesPromise ??= (async () => {
    const t0 = Date.now();
    const memoryd = await buildImage({
      dockerfile: path.join(DOCKER, 'Dockerfile'), ignore: readDocker('Dockerfile.dockerignore'), context: REPO, dir: path.join(dir, 'image-memoryd'),
    });
    const proxy = await buildImage({
      dockerfile: path.join(DOCKER, 'proxy.Dockerfile'), ignore: readDocker('proxy.Dockerfile.dockerignore'), context: DOCKER, dir: path.join(dir, 'image-proxy'),
    });
    console.log(`both images built in a throwaway root in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return { memoryd, proxy };
  })();
  return imagesPromise;
}

// Run `script` (bash) in fresh namespaces with a helper `rec NAME CMD...` that keeps each
// command's stdout, stderr and status; returns {NAME: {rc, out, err}}.
async function recorded(name, script, opts) {
  const out = path.join(dir, `${name}-out`);
  fs.mkdirSync(out, { recursive: true });
  const r = await inNamespaces(`
rec() { local n=$1; shift; local rc=0; "$@" >${sh(out)}/$n.out 2>${sh(out)}/$n.err || rc=$?; echo $rc >${sh(out)}/$n.rc; }
${script}`, opts);
  assert.equal(r.code, 0, `${name}: the sandbox script failed:\n${r.stdout}${r.stderr}`);
  const res = {};
  for (const f of fs.readdirSync(out).filter((x) => x.endsWith('.rc'))) {
    const n = f.slice(0, -3);
    const text = (ext) => (fs.existsSync(path.join(out, `${n}.${ext}`)) ? fs.readFileSync(path.join(out, `${n}.${ext}`), 'utf8') : '');
    res[n] = { rc: Number(fs.readFileSync(path.join(out, f), 'utf8')), out: text('out'), err: text('err') };
  }
  return res;
}

// The Debian package of each library memoryd names (NEEDED), as the loader finds it.
const OWNERS = String.raw`for l in $(readelf -d /usr/local/bin/memoryd | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  p=$(ldd /usr/local/bin/memoryd | awk -v l="$l" '$1 == l {print $3}')
  { dpkg -S "$p" 2>/dev/null || dpkg -S "/usr$p"; } | sed 's/:.*//'
done | sort -u`;

test('docker/Dockerfile carried out in a throwaway root: setup.sh + build.sh, then install-runtime.sh; what the image holds', { skip: skipSandbox, timeout: 900000 }, async () => {
  const { memoryd } = await images();
  const { build, runtime } = memoryd.stages;
  assert.match(memoryd.log, /== build: RUN scripts\/setup\.sh && scripts\/build\.sh\n/);
  assert.match(memoryd.log, /Built target memoryd\n/);
  assert.match(memoryd.log, /== runtime: RUN \/usr\/local\/lib\/memoryd\/install-runtime\.sh --uid 10001 --clean-apt\ninstall-runtime: created user memoryd \(uid=10001\(memoryd\) gid=10001\(memoryd\) groups=10001\(memoryd\)\)\n/);
  assert.ok(fs.existsSync(`${build.layer}/src/build/memoryd`));
  const layer = runtime.layer;
  // What matters of a program's mode, whatever umask the checkout was made with (0755 or
  // 0775 on the sources): owned by root:root, executable by everyone (the image runs as
  // 10001), not writable by others, no set-id bit. Group write for group root is harmless.
  const program = (p) => {
    const s = fs.statSync(`${layer}${p}`);
    return { owner: `${s.uid}:${s.gid}`, executableByAll: (s.mode & 0o111) === 0o111, otherWrite: Boolean(s.mode & 0o002), setid: Boolean(s.mode & 0o6000) };
  };
  for (const p of ['/usr/local/bin/memoryd', '/usr/local/lib/memoryd/install-runtime.sh', '/usr/local/lib/memoryd/healthcheck.sh']) {
    assert.deepEqual(program(p), { owner: '0:0', executableByAll: true, otherWrite: false, setid: false }, p);
  }
  // The state directory's mode is set by install-runtime.sh itself, so it is exact.
  const state = fs.statSync(`${layer}/var/lib/memoryd`);
  assert.equal(`${state.uid}:${state.gid} ${(state.mode & 0o7777).toString(8)}`, '10001:10001 750');
  assert.deepEqual(fs.readdirSync(`${layer}/usr/local/bin`), ['memoryd'], 'nothing else was installed in /usr/local/bin');
  assert.ok(!fs.existsSync(`${layer}/src`), 'no sources in the runtime image');

  const m = `${dir}/inspect/merged`;
  const res = await recorded('inspect', `
${mountRoot({ layers: [layer], upper: `${dir}/inspect/upper`, work: `${dir}/inspect/work`, merged: m })}
rec version chroot ${sh(m)} setpriv --reuid=10001 --regid=10001 --clear-groups /usr/local/bin/memoryd --version
rec needed sh -c ${sh(`readelf -d ${m}/usr/local/bin/memoryd | sed -n 's/.*(NEEDED).*\\[\\(.*\\)\\]/\\1/p'`)}
rec owners chroot ${sh(m)} sh -c ${sh(OWNERS)}
rec ldd chroot ${sh(m)} sh -c 'ldd /usr/local/bin/memoryd | grep -c "not found" || true'
rec aptlists sh -c ${sh(`ls -A ${m}/var/lib/apt/lists | wc -l`)}
`, { net: 'private' });
  assert.deepEqual(res.version.rc, 0, res.version.err);
  assert.match(res.version.out, /^memoryd \d+\.\d+\.\d+/);
  assert.deepEqual(res.needed.out.split('\n').filter(Boolean).sort(), ['libarchive.so.13', 'libc.so.6', 'libcrypto.so.3', 'libcurl.so.4', 'libjansson.so.4', 'libmicrohttpd.so.12', 'libpcre2-8.so.0', 'libpq.so.5', 'libsodium.so.23', 'libsqlite3.so.0', 'libutf8proc.so.2', 'libzstd.so.1']);
  // Every library memoryd links comes from a package install-runtime.sh installs, or libc6
  // (essential: in every Debian image).
  assert.deepEqual(res.owners.out.split('\n').filter(Boolean), ['libarchive13', 'libc6', 'libcurl4', 'libjansson4', 'libmicrohttpd12', 'libpcre2-8-0', 'libpq5', 'libsodium23', 'libsqlite3-0', 'libssl3', 'libutf8proc2', 'libzstd1']);
  assert.match(readDocker('install-runtime.sh'), /\npkgs=\(libmicrohttpd12 libjansson4 libsqlite3-0 libutf8proc2 libpq5 libssl3 libsodium23 libarchive13 libcurl4 libpcre2-8-0 libzstd1\)\n/);
  assert.deepEqual([res.ldd.out, res.aptlists.out], ['0\n', '0\n']);
});

test('docker/proxy.Dockerfile carried out in a throwaway root: install-proxy.sh; nginx.conf in place, access log to stdout', { skip: skipSandbox, timeout: 900000 }, async () => {
  const { proxy } = await images();
  const layer = proxy.stages.stage0.layer;
  assert.equal(fs.readFileSync(`${layer}/etc/nginx/nginx.conf`, 'utf8'), readDocker('nginx.conf'));
  assert.equal(fs.readlinkSync(`${layer}/var/log/nginx/access.log`), '/dev/stdout');
  assert.deepEqual(fs.readdirSync(`${layer}/usr/local/lib/memoryd`).sort(), ['healthcheck.sh', 'install-proxy.sh']);
  assert.ok(!fs.existsSync(`${layer}/etc/nginx/tenants.map`), 'no keys in the image');
  // install-proxy.sh again, as on a host: idempotent.
  const m = `${dir}/proxy-again/merged`;
  const res = await recorded('proxy-again', `
${mountRoot({ layers: [layer], upper: `${dir}/proxy-again/upper`, work: `${dir}/proxy-again/work`, merged: m })}
rec again chroot ${sh(m)} /usr/local/lib/memoryd/install-proxy.sh --container-logs --clean-apt
rec bad chroot ${sh(m)} /usr/local/lib/memoryd/install-proxy.sh --nope
rec link readlink ${sh(`${m}/var/log/nginx/access.log`)}
`, { net: 'private' });
  assert.deepEqual(res.again, { rc: 0, out: '', err: '' });
  assert.deepEqual(res.bad, { rc: 2, out: '', err: 'install-proxy: unknown argument: --nope\n' });
  assert.deepEqual(res.link, { rc: 0, out: '/dev/stdout\n', err: '' });
});

test('compose.yaml run in network namespaces: through the proxy to memoryd, as compose would run the two images', { skip: skipSandbox, timeout: 900000 }, async () => {
  const { memoryd: mImage, proxy: pImage } = await images();
  const doc = compose();
  const ms = doc.services.memoryd;
  const ps = doc.services.proxy;
  const backend = doc.networks.backend.ipam.config[0].subnet; // 172.30.77.0/24
  const prefix = backend.split('.').slice(0, 3).join('.');
  const memorydAddress = `${prefix}.128`; // Docker gives it one of ip_range's
  const proxyAddress = ps.networks.backend.ipv4_address;
  const frontAddress = '172.30.78.10'; // compose picks the frontend subnet; any will do
  const volume = path.join(dir, 'volume-memoryd-data');
  fs.mkdirSync(volume);
  const service = (s, name, image, pidVar, hosts) => container({
    image, dir: path.join(dir, `run-${name}`), pidVar, hosts,
    env: s.environment ?? {}, readOnly: s.read_only, tmpfs: s.tmpfs, capAdd: s.cap_add ?? [], capDrop: s.cap_drop ?? [],
    noNewPrivileges: (s.security_opt ?? []).includes('no-new-privileges:true'),
    volumes: (s.volumes ?? []).map((v) => {
      const [src, target, mode] = v.split(':');
      return { source: src.startsWith('./') ? path.join(DOCKER, src) : { 'memoryd-data': volume }[src], target, readOnly: mode === 'ro' };
    }),
  });
  const m = service(ms, 'memoryd', mImage.stages.runtime, 'PID_M');
  const p = service(ps, 'proxy', pImage.stages.stage0, 'PID_P', { memoryd: memorydAddress });
  const curl = (name, url, args = []) => `rec ${name} curl -sS -w '\\n%{http_code}' --max-time 10 ${args.map(sh).join(' ')} ${sh(url)}`;
  const post = (name, body, headers = [], url = `http://${frontAddress}:8080/memory`) =>
    curl(name, url, [...headers.flatMap((h) => ['-H', h]), '-d', JSON.stringify(body)]);
  const A = 'Authorization: Bearer example-key-team-a-do-not-use';
  const B = 'Authorization: Bearer example-key-team-b-do-not-use';
  const healthy = (c, v) => `for i in $(seq 1 100); do ${c.exec(v)} >/dev/null 2>&1 && break; sleep 0.1; done`;
  const mHealth = imageConfig(mImage.stages.runtime.stage).healthcheck.cmd;
  const pHealth = imageConfig(pImage.stages.stage0.stage).healthcheck.cmd;

  const res = await recorded('compose', `
# The Docker host: one bridge per compose network.
ip link add br-backend type bridge && ip addr add ${prefix}.1/24 dev br-backend && ip link set br-backend up
ip link add br-frontend type bridge && ip addr add 172.30.78.1/24 dev br-frontend && ip link set br-frontend up
n=0
attach() { # pid ifname bridge address
  # (wait until the container's first process has its own network namespace)
  while [[ "$(readlink /proc/$1/ns/net)" == "$(readlink /proc/self/ns/net)" ]]; do sleep 0.01; done
  n=$((n + 1)); ip link add "veth$n" type veth peer name "peer$n"
  ip link set "veth$n" master "$3" up; ip link set "peer$n" netns "$1"
  nsenter --net=/proc/$1/ns/net sh -c "ip link set lo up && ip link set peer$n name $2 && ip addr add $4 dev $2 && ip link set $2 up"
}
# memoryd first (the proxy depends on it being healthy).
${m.setup}
${m.start}
attach "$PID_M" eth0 br-backend ${memorydAddress}/24
${m.ready}
${healthy(m, mHealth)}
rec m_health ${m.exec(mHealth)}
${p.setup}
${p.start}
attach "$PID_P" eth0 br-backend ${proxyAddress}/24
attach "$PID_P" eth1 br-frontend ${frontAddress}/24
${p.ready}
${healthy(p, pHealth)}
rec p_health ${p.exec(pHealth)}

# A client, through the proxy.
${post('create_a', { command: 'create', path: '/memories/a.txt', file_text: 'from A' }, [A])}
${post('view_b', { command: 'view', path: '/memories' }, [B])}
${post('forged_b', { command: 'view', path: '/memories' }, [B, 'X-Tenant-ID: team-a'])}
${post('view_a', { command: 'view', path: '/memories' }, [A])}
${post('nokey', { command: 'view', path: '/memories' }, ['X-Tenant-ID: team-a'])}
# Around the proxy, from the host's address on the backend network.
${post('direct', { command: 'view', path: '/memories' }, ['X-Tenant-ID: team-a'], `http://${memorydAddress}:8080/memory`)}
${curl('direct_health', `http://${memorydAddress}:8080/healthz`)}
# Metrics: on their own port (MEMORYD_METRICS_LISTEN), not on the public one.
${curl('metrics', `http://${memorydAddress}:9464/metrics`)}
${curl('public_metrics', `http://${memorydAddress}:8080/metrics`)}

# Inside the containers.
rec m_proc grep -E '^(Uid|Gid|CapEff|CapBnd|NoNewPrivs):' /proc/$PID_M/status
rec m_rootfs ${m.exec(['/bin/sh', '-c', 'touch /var/x 2>&1; touch /usr/local/bin/x'])}
rec m_tmp ${m.exec(['/bin/sh', '-c', 'echo ok >/tmp/x && cat /tmp/x && pwd && id'])}
# docker compose exec memoryd memoryd admin ...: tenant administration beside memoryd.
rec m_admin ${m.exec(['/usr/local/bin/memoryd', 'admin', 'tenants', 'list'])}
rec p_proc grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs):' /proc/$PID_P/status
rec p_workers sh -c 'for c in $(cat /proc/'"$PID_P"'/task/*/children); do grep -E "^Uid:" /proc/$c/status; done | sort -u'

# docker compose down: the proxy (SIGQUIT), then memoryd (SIGTERM), each waited for.
kill -${pImage.stages.stage0.config.stopsignal.replace('SIG', '')} "$PID_P"; rc=0; wait "$PID_P" || rc=$?; echo "$rc" >${sh(path.join(dir, 'compose-out'))}/p_exit.rc
kill -${mImage.stages.runtime.config.stopsignal.replace('SIG', '')} "$PID_M"; rc=0; wait "$PID_M" || rc=$?; echo "$rc" >${sh(path.join(dir, 'compose-out'))}/m_exit.rc
`, { net: 'private' });

  const body = (r) => ({ status: Number(r.out.slice(r.out.lastIndexOf('\n') + 1)), body: r.out.slice(0, r.out.lastIndexOf('\n')), rc: r.rc, err: r.err });
  const LISTING = 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\\n';
  const mLog = fs.readFileSync(path.join(dir, 'run-memoryd', 'stderr'), 'utf8');
  const pErr = fs.readFileSync(path.join(dir, 'run-proxy', 'stderr'), 'utf8');
  const diag = `\nmemoryd:\n${mLog}\nnginx:\n${pErr}`;
  assert.deepEqual(res.m_health, { rc: 0, out: 'healthy: {"status":"ok"}\n', err: '' }, diag);
  assert.deepEqual(res.p_health, { rc: 0, out: 'healthy: {"status":"ok"}\n', err: '' }, diag);
  assert.deepEqual(body(res.create_a), { status: 200, body: '{"type":"tool_result","content":"File created successfully at: /memories/a.txt","is_error":false}', rc: 0, err: '' }, diag);
  assert.deepEqual(body(res.view_b), { status: 200, body: `{"type":"tool_result","content":"${LISTING}0B\\t/memories","is_error":false}`, rc: 0, err: '' });
  assert.deepEqual(body(res.forged_b), body(res.view_b));
  assert.deepEqual(body(res.view_a), { status: 200, body: `{"type":"tool_result","content":"${LISTING}6B\\t/memories\\n6B\\t/memories/a.txt","is_error":false}`, rc: 0, err: '' });
  assert.deepEqual(body(res.nokey).status, 401);
  assert.deepEqual(body(res.direct), { status: 403, body: `{"type":"tool_result","content":"Error: Forbidden: ${prefix}.1 is not a trusted proxy; send requests through the proxy","is_error":true}`, rc: 0, err: '' });
  assert.deepEqual(body(res.direct_health), { status: 200, body: '{"status":"ok"}', rc: 0, err: '' });
  // The requests that reached memoryd, counted: one create, three views through the proxy.
  const metrics = body(res.metrics);
  assert.equal(metrics.status, 200, diag);
  assert.match(metrics.body, /^memoryd_requests_total\{command="create",class="2xx"\} 1$/m);
  assert.match(metrics.body, /^memoryd_requests_total\{command="view",class="2xx"\} 3$/m);
  assert.ok(!metrics.body.includes('team-a') && !metrics.body.includes('team-b'), 'a tenant name in /metrics');
  assert.equal(body(res.public_metrics).status, 404);

  // memoryd: uid/gid 10001, no capabilities at all, no-new-privileges, read-only root,
  // writable /tmp (tmpfs), in its WORKDIR.
  assert.deepEqual(res.m_proc.out, 'Uid:\t10001\t10001\t10001\t10001\nGid:\t10001\t10001\t10001\t10001\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n');
  assert.deepEqual(res.m_rootfs, { rc: 1, out: 'touch: cannot touch \'/var/x\': Read-only file system\n', err: 'touch: cannot touch \'/usr/local/bin/x\': Read-only file system\n' });
  assert.deepEqual(res.m_tmp, { rc: 0, out: 'ok\n/var/lib/memoryd\nuid=10001(memoryd) gid=10001(memoryd) groups=10001(memoryd)\n', err: '' });
  assert.deepEqual([res.m_admin.rc, res.m_admin.err], [0, ''], diag);
  assert.match(res.m_admin.out, /^tenant\tfiles\tbytes\tversions\tlast_write\nteam-a\t1\t6\t1\t\S+\n$/); // team-b only viewed: no row
  // nginx: the master is root with CHOWN, SETGID, SETUID only; the workers are www-data.
  const capsHex = (1n << 0n | 1n << 6n | 1n << 7n).toString(16).padStart(16, '0'); // chown, setgid, setuid
  assert.deepEqual(res.p_proc.out, `Uid:\t0\t0\t0\t0\nCapEff:\t${capsHex}\nCapBnd:\t${capsHex}\nNoNewPrivs:\t1\n`);
  assert.deepEqual(res.p_workers.out, 'Uid:\t33\t33\t33\t33\n');
  // Stopped cleanly by their stop signals.
  assert.deepEqual([res.p_exit.rc, res.m_exit.rc], [0, 0], diag);
  assert.match(mLog.trim().split('\n').at(-1), /"msg":"stopped"/);

  // The data is on the volume, owned by memoryd, intact, in team-a's name.
  const vol = fs.readdirSync(volume).sort();
  assert.deepEqual(vol, ['memoryd.db']);
  assert.deepEqual([fs.statSync(volume).uid, fs.statSync(volume).mode & 0o777, fs.statSync(path.join(volume, 'memoryd.db')).uid], [10001, 0o750, 10001]);
  const q = await run('sqlite3', [path.join(volume, 'memoryd.db'), 'PRAGMA integrity_check; SELECT t.name, e.path FROM entries e JOIN tenants t ON t.id = e.tenant ORDER BY 1, 2;']);
  assert.deepEqual([q.code, q.stdout], [0, 'ok\nteam-a|/memories\nteam-a|/memories/a.txt\n']);
  // The proxy's access log went to its standard output (docker logs).
  const access = fs.readFileSync(path.join(dir, 'run-proxy', 'stdout'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(access.filter((l) => l.uri === '/memory').map((l) => [l.tenant, l.status, l.client]),
    [['team-a', 200, '172.30.78.1'], ['team-b', 200, '172.30.78.1'], ['team-b', 200, '172.30.78.1'], ['team-a', 200, '172.30.78.1'], ['', 401, '172.30.78.1']]);
});

// ---- the postgres profile ----

let postgresImagePromise = null;
function postgresImage() {
  postgresImagePromise ??= buildImage({
    dockerfile: path.join(DOCKER, 'postgres.Dockerfile'), ignore: readDocker('postgres.Dockerfile.dockerignore'), context: DOCKER, dir: path.join(dir, 'image-postgres'),
  });
  return postgresImagePromise;
}

const idOf = async (user) => (await run('id', ['-u', user])).stdout.trim() + ':' + (await run('id', ['-g', user])).stdout.trim();

test('docker/postgres.Dockerfile carried out in a throwaway root: install-postgres.sh; the data and socket directories, the scripts', { skip: skipSandbox, timeout: 900000 }, async () => {
  const image = await postgresImage();
  const layer = image.stages.stage0.layer;
  assert.match(image.log, /== stage0: RUN \/usr\/local\/lib\/memoryd\/install-postgres\.sh --clean-apt\n/);
  const postgres = await idOf('postgres');
  assert.deepEqual(fs.readdirSync(`${layer}/var/lib/postgresql/data`), [], 'no cluster in the image: the entrypoint makes it in the volume');
  assert.deepEqual(fs.readdirSync(`${layer}/usr/local/lib/memoryd`).sort(), ['install-postgres.sh', 'postgres-entrypoint.sh']);
  for (const p of ['/usr/local/lib/memoryd/install-postgres.sh', '/usr/local/lib/memoryd/postgres-entrypoint.sh']) {
    const st = fs.statSync(`${layer}${p}`);
    assert.deepEqual([st.uid, st.gid, (st.mode & 0o111) === 0o111, Boolean(st.mode & 0o022)], [0, 0, true, false], p);
  }
  const m = `${dir}/postgres-again/merged`;
  const res = await recorded('postgres-again', `
${mountRoot({ layers: [layer], upper: `${dir}/postgres-again/upper`, work: `${dir}/postgres-again/work`, merged: m })}
rec again chroot ${sh(m)} /usr/local/lib/memoryd/install-postgres.sh --clean-apt
rec bad chroot ${sh(m)} /usr/local/lib/memoryd/install-postgres.sh --nope
rec nonroot chroot ${sh(m)} setpriv --reuid=65534 --regid=65534 --clear-groups /usr/local/lib/memoryd/install-postgres.sh
rec server chroot ${sh(m)} /usr/lib/postgresql/15/bin/postgres --version
rec aptlists sh -c ${sh(`ls -A ${m}/var/lib/apt/lists | wc -l`)}
rec dirs stat -c '%n %u:%g %a' ${sh(`${m}/var/lib/postgresql/data`)} ${sh(`${m}/run/postgresql`)}
`, { net: 'private' });
  assert.deepEqual(res.dirs, { rc: 0, out: `${m}/var/lib/postgresql/data ${postgres} 700\n${m}/run/postgresql ${postgres} 2775\n`, err: '' });
  assert.deepEqual(res.again, { rc: 0, out: '', err: '' });
  assert.deepEqual(res.bad, { rc: 2, out: '', err: 'install-postgres: unknown argument: --nope\n' });
  assert.deepEqual(res.nonroot, { rc: 1, out: '', err: 'install-postgres: run as root\n' });
  assert.match(res.server.out, /^postgres \(PostgreSQL\) 15\.\d+/);
  assert.deepEqual(res.aptlists.out, '0\n');
});

test('compose.yaml\'s postgres profile run in network namespaces: PostgreSQL\'s first start, two memoryd on it behind the proxy, one truth, and the one left serving', { skip: skipSandbox, timeout: 900000 }, async () => {
  const [{ memoryd: mImage, proxy: pImage }, gImage] = await Promise.all([images(), postgresImage()]);
  const doc = compose();
  const s = doc.services;
  const prefix = doc.networks.backend.ipam.config[0].subnet.split('.').slice(0, 3).join('.');
  const pgAddress = `${prefix}.128`; // Docker gives PostgreSQL one of ip_range's
  const [a1, a2] = ['memoryd-pg-1', 'memoryd-pg-2'].map((n) => s[n].networks.backend.ipv4_address);
  const proxyAddress = s['proxy-pg'].networks.backend.ipv4_address;
  const frontAddress = '172.30.78.10';
  // docker/.env as docker/README.md says: a password made with openssl rand -hex 32.
  const password = (await run('openssl', ['rand', '-hex', '32'])).stdout.trim();
  assert.match(password, /^[0-9a-f]{64}$/);
  const vars = { MEMORYD_PG_PASSWORD: password };
  const named = { 'postgres-data': path.join(dir, 'volume-postgres-data'), 'postgres-data-2': path.join(dir, 'volume-postgres-data-2') };
  for (const v of Object.values(named)) fs.mkdirSync(v);
  const service = (svc, name, image, pidVar, hosts, { env = {}, volume = 'postgres-data' } = {}) => container({
    image, dir: path.join(dir, `run-${name}`), pidVar, hosts,
    env: { ...Object.fromEntries(Object.entries(svc.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), vars)])), ...env },
    readOnly: svc.read_only, tmpfs: svc.tmpfs, capAdd: svc.cap_add ?? [], capDrop: svc.cap_drop ?? [],
    noNewPrivileges: (svc.security_opt ?? []).includes('no-new-privileges:true'),
    volumes: (svc.volumes ?? []).map((v) => {
      const [src, target, mode] = v.split(':');
      return { source: src.startsWith('./') ? path.join(DOCKER, src) : { 'postgres-data': named[volume] }[src], target, readOnly: mode === 'ro' };
    }),
  });
  const g = service(s.postgres, 'postgres', gImage.stages.stage0, 'PID_G');
  const m1 = service(s['memoryd-pg-1'], 'memoryd-pg-1', mImage.stages.runtime, 'PID_1', { postgres: pgAddress });
  const m2 = service(s['memoryd-pg-2'], 'memoryd-pg-2', mImage.stages.runtime, 'PID_2', { postgres: pgAddress });
  const extraHosts = s['proxy-pg'].extra_hosts.map((h) => [h.slice(0, h.indexOf(':')), h.slice(h.indexOf(':') + 1)]);
  const p = service(s['proxy-pg'], 'proxy-pg', pImage.stages.stage0, 'PID_P', extraHosts);
  // PostgreSQL again on the same volume (a restart), and on a fresh one without a password.
  const gAgain = service(s.postgres, 'postgres-again', gImage.stages.stage0, 'PID_G2');
  const gNoPassword = service(s.postgres, 'postgres-nopw', gImage.stages.stage0, 'PID_G3', null, { env: { MEMORYD_PG_PASSWORD: '' }, volume: 'postgres-data-2' });

  const curl = (name, url, args = []) => `rec ${name} curl -sS -w '\\n%{http_code}' --max-time 10 ${args.map(sh).join(' ')} ${sh(url)}`;
  const post = (name, body, headers = [], url = `http://${frontAddress}:8080/memory`) =>
    curl(name, url, [...headers.flatMap((h) => ['-H', h]), '-d', JSON.stringify(body)]);
  const A = 'Authorization: Bearer example-key-team-a-do-not-use';
  const B = 'Authorization: Bearer example-key-team-b-do-not-use';
  const healthy = (c, v, tries = 100) => `for i in $(seq 1 ${tries}); do ${c.exec(v)} >/dev/null 2>&1 && break; sleep 0.1; done`;
  const mHealth = imageConfig(mImage.stages.runtime.stage).healthcheck.cmd;
  const pHealth = imageConfig(pImage.stages.stage0.stage).healthcheck.cmd;
  const gHealth = imageConfig(gImage.stages.stage0.stage).healthcheck.cmd;
  const out = path.join(dir, 'compose-pg-out');
  const psql = (name, user, pw, sql, db = 'memoryd') => `rec ${name} env PGPASSWORD=${sh(pw)} PGCONNECT_TIMEOUT=5 /usr/lib/postgresql/15/bin/psql -X -A -t -h ${pgAddress} -U ${user} -d ${db} -c ${sh(sql)}`;
  const waitExit = (pidVar, n) => `rc=0; wait "$${pidVar}" || rc=$?; echo "$rc" >${sh(out)}/${n}.rc`;
  const FILES = 'SELECT t.name || \' \' || e.path || \' \' || e.size FROM entries e JOIN tenants t ON t.id = e.tenant WHERE e.kind = 0 ORDER BY 1';
  const VIEWS = 20;

  const res = await recorded('compose-pg', `
# The Docker host: one bridge per compose network.
ip link add br-backend type bridge && ip addr add ${prefix}.1/24 dev br-backend && ip link set br-backend up
ip link add br-frontend type bridge && ip addr add 172.30.78.1/24 dev br-frontend && ip link set br-frontend up
n=0
attach() { # pid ifname bridge address
  while [[ "$(readlink /proc/$1/ns/net)" == "$(readlink /proc/self/ns/net)" ]]; do sleep 0.01; done
  n=$((n + 1)); ip link add "veth$n" type veth peer name "peer$n"
  ip link set "veth$n" master "$3" up; ip link set "peer$n" netns "$1"
  nsenter --net=/proc/$1/ns/net sh -c "ip link set lo up && ip link set peer$n name $2 && ip addr add $4 dev $2 && ip link set $2 up"
}
# PostgreSQL first (both memoryd depend on it being healthy); its first start makes the cluster.
${g.setup}
${g.start}
attach "$PID_G" eth0 br-backend ${pgAddress}/24
${g.ready}
${healthy(g, gHealth, 600)}
rec g_health ${g.exec(gHealth)}
${m1.setup}
${m1.start}
attach "$PID_1" eth0 br-backend ${a1}/24
${m1.ready}
${m2.setup}
${m2.start}
attach "$PID_2" eth0 br-backend ${a2}/24
${m2.ready}
${healthy(m1, mHealth)}
${healthy(m2, mHealth)}
rec m1_health ${m1.exec(mHealth)}
rec m2_health ${m2.exec(mHealth)}
${p.setup}
${p.start}
attach "$PID_P" eth0 br-backend ${proxyAddress}/24
attach "$PID_P" eth1 br-frontend ${frontAddress}/24
${p.ready}
${healthy(p, pHealth)}
rec p_health ${p.exec(pHealth)}

# Through the proxy: a write, then views of it, each on a new connection.
${post('create', { command: 'create', path: '/memories/shared.md', file_text: 'one truth\n' }, [A])}
${Array.from({ length: VIEWS }, (_, i) => post(`view_${i}`, { command: 'view', path: '/memories/shared.md' }, [A])).join('\n')}
${post('view_b', { command: 'view', path: '/memories' }, [B])}
${post('direct', { command: 'view', path: '/memories' }, ['X-Tenant-ID: team-a'], `http://${a1}:8080/memory`)}

# PostgreSQL from the backend network: the role memoryd with its password, nothing else.
${psql('pg_files', 'memoryd', password, FILES)}
${psql('pg_role', 'memoryd', password, "SELECT rolsuper || ' ' || rolcreaterole || ' ' || rolcreatedb FROM pg_roles WHERE rolname = current_user")}
${psql('pg_wrong', 'memoryd', 'wrong', 'SELECT 1')}
${psql('pg_super', 'postgres', password, 'SELECT 1', 'postgres')}
${psql('pg_otherdb', 'memoryd', password, 'SELECT 1', 'postgres')}
rec g_proc grep -E '^(Uid|Gid|CapEff|CapBnd|NoNewPrivs):' /proc/$PID_G/status
rec g_rootfs ${g.exec(['/bin/sh', '-c', 'touch /var/x 2>&1; touch /usr/local/bin/x'])}
rec g_data ${g.exec(['/bin/sh', '-c', 'stat -c "%U %a" "$PGDATA" && cat "$PGDATA/PG_VERSION"'])}
rec m1_proc grep -E '^(Uid|CapEff|NoNewPrivs):' /proc/$PID_1/status

# memoryd-pg-1 stops: the proxy passes every request to memoryd-pg-2. First team-a's bucket in
# nginx.conf's per-tenant limit (10 r/s, burst 20) refills: the ${VIEWS + 1} requests above may
# have come in well under a second, and 7 more at once would pass the burst (429).
sleep 2
kill -TERM "$PID_1"; ${waitExit('PID_1', 'm1_exit')}
${Array.from({ length: 6 }, (_, i) => post(`after_${i}`, { command: 'view', path: '/memories/shared.md' }, [A])).join('\n')}
${post('create_after', { command: 'create', path: '/memories/after.md', file_text: 'served by the one left\n' }, [A])}

# docker compose down: the proxy (SIGQUIT), memoryd (SIGTERM), PostgreSQL (SIGINT).
kill -QUIT "$PID_P"; ${waitExit('PID_P', 'p_exit')}
kill -TERM "$PID_2"; ${waitExit('PID_2', 'm2_exit')}
kill -${gImage.stages.stage0.config.stopsignal.replace('SIG', '')} "$PID_G"; ${waitExit('PID_G', 'g_exit')}

# docker compose up again: the cluster on the volume is used as it is.
${gAgain.setup}
${gAgain.start}
attach "$PID_G2" eth0 br-backend ${pgAddress}/24
${gAgain.ready}
${healthy(gAgain, gHealth, 600)}
# The first PostgreSQL's network namespace, with the same address, goes away a moment after
# its process (the kernel frees it later), and this namespace may still have its MAC address
# for that address: forget it, and wait until the address answers from this side too.
ip neigh flush to ${pgAddress} 2>/dev/null || true
for i in $(seq 1 100); do ${psql('reach', 'memoryd', password, 'SELECT 1').replace(/^rec reach /, '')} >/dev/null 2>&1 && break; sleep 0.1; ip neigh flush to ${pgAddress} 2>/dev/null || true; done
${psql('again_files', 'memoryd', password, FILES)}
kill -INT "$PID_G2"; ${waitExit('PID_G2', 'g2_exit')}

# A first start without a password: refused, nothing made.
${gNoPassword.setup}
${gNoPassword.start}
${gNoPassword.ready}
${waitExit('PID_G3', 'g3_exit')}
`, { net: 'private' });

  const text = (n, f) => fs.readFileSync(path.join(dir, `run-${n}`, f), 'utf8');
  const logOf = (n) => text(n, 'stderr').trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const diag = `\npostgres:\n${text('postgres', 'stderr')}\nmemoryd-pg-1:\n${text('memoryd-pg-1', 'stderr')}\nmemoryd-pg-2:\n${text('memoryd-pg-2', 'stderr')}\nnginx:\n${text('proxy-pg', 'stderr')}`;
  const body = (r) => ({ status: Number(r.out.slice(r.out.lastIndexOf('\n') + 1)), body: r.out.slice(0, r.out.lastIndexOf('\n')), rc: r.rc, err: r.err });
  // (a view of a file sent as a command object carries its ETag in the JSON too)
  const VIEW = `{"type":"tool_result","content":"Here's the content of /memories/shared.md with line numbers:\\n     1\\tone truth\\n     2\\t","is_error":false,"etag":"\\"sha256-${createHash('sha256').update('one truth\n').digest('hex')}\\""}`;

  // Healthy, in order; PostgreSQL's first start said what it did.
  for (const h of ['g_health', 'm1_health', 'm2_health', 'p_health']) {
    assert.deepEqual([h, res[h].rc], [h, 0], diag);
  }
  assert.deepEqual([res.m1_health.out, res.p_health.out], ['healthy: {"status":"ok"}\n', 'healthy: {"status":"ok"}\n']);
  const gErr = text('postgres', 'stderr');
  assert.match(gErr, /^postgres-entrypoint: first start: initdb in \/var\/lib\/postgresql\/data\npostgres-entrypoint: the role memoryd and its database are made\n/);
  // memoryd on PostgreSQL, by the URI without a password; the schema made once, by one of the two.
  const l1 = logOf('memoryd-pg-1');
  const l2 = logOf('memoryd-pg-2');
  for (const l of [l1, l2]) assert.equal(l.find((x) => x.msg === 'listening').db, 'postgresql://memoryd@postgres:5432/memoryd');
  // Each migration of sql/postgres/ applied once, by one instance or the other.
  const migrations = fs.readdirSync(path.join(REPO, 'sql/postgres')).filter((f) => /^\d{3}_.*\.sql$/.test(f)).length;
  assert.deepEqual([...l1, ...l2].filter((x) => x.msg === 'schema migrated').map((x) => x.version).sort((a, b) => a - b),
    Array.from({ length: migrations }, (_, i) => i + 1), diag);
  for (const t of [gErr, text('memoryd-pg-1', 'stderr'), text('memoryd-pg-2', 'stderr'), text('proxy-pg', 'stderr'), text('proxy-pg', 'stdout')]) {
    assert.ok(!t.includes(password), 'the password is in no log');
  }

  // One truth: the write through one instance, every view through either shows it, and
  // both instances answered views.
  assert.deepEqual(body(res.create), { status: 200, body: '{"type":"tool_result","content":"File created successfully at: /memories/shared.md","is_error":false}', rc: 0, err: '' }, diag);
  for (let i = 0; i < VIEWS; i++) assert.deepEqual(body(res[`view_${i}`]), { status: 200, body: VIEW, rc: 0, err: '' }, `view ${i}`);
  // memoryd's logs, read at the end, also hold the 6 views and the create sent after
  // memoryd-pg-1 stopped (below), which memoryd-pg-2 answered: every request answered once.
  const served = (l, command) => l.filter((x) => x.msg === 'request' && x.route === '/memory' && x.tenant === 'team-a' && x.command === command && x.status === 200).length;
  assert.deepEqual([served(l1, 'create') + served(l2, 'create'), served(l1, 'view') + served(l2, 'view')], [2, VIEWS + 6], diag);
  const [creator, viewsOfOther] = served(l1, 'create') === 1 ? ['memoryd-pg-1', served(l2, 'view') - 6] : ['memoryd-pg-2', served(l1, 'view')];
  assert.ok(viewsOfOther > 0, `${creator} wrote the file; the other instance answered none of the views before the stop`);
  assert.ok(served(l1, 'view') > 0 && served(l2, 'view') - 6 > 0, 'both instances answered views');
  assert.deepEqual(body(res.view_b), { status: 200, body: '{"type":"tool_result","content":"Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\\n0B\\t/memories","is_error":false}', rc: 0, err: '' });
  assert.deepEqual(body(res.direct), { status: 403, body: `{"type":"tool_result","content":"Error: Forbidden: ${prefix}.1 is not a trusted proxy; send requests through the proxy","is_error":true}`, rc: 0, err: '' });

  // PostgreSQL: the file in memoryd's tables; the role memoryd is no superuser and may not
  // make roles or databases; a wrong password, another role, another database: refused.
  assert.deepEqual(res.pg_files, { rc: 0, out: 'team-a /memories/shared.md 10\n', err: '' });
  assert.deepEqual(res.pg_role, { rc: 0, out: 'false false false\n', err: '' });
  assert.deepEqual([res.pg_wrong.rc, res.pg_wrong.err], [2, `psql: error: connection to server at "${pgAddress}", port 5432 failed: FATAL:  password authentication failed for user "memoryd"\n`]);
  assert.deepEqual([res.pg_super.rc, res.pg_super.err], [2, `psql: error: connection to server at "${pgAddress}", port 5432 failed: FATAL:  no pg_hba.conf entry for host "${prefix}.1", user "postgres", database "postgres", no encryption\n`]);
  assert.deepEqual([res.pg_otherdb.rc, res.pg_otherdb.err], [2, `psql: error: connection to server at "${pgAddress}", port 5432 failed: FATAL:  no pg_hba.conf entry for host "${prefix}.1", user "memoryd", database "postgres", no encryption\n`]);
  // The PostgreSQL container: the user postgres, no capabilities, a read-only root, its
  // data (mode 0700) on the volume.
  const [uid, gid] = (await idOf('postgres')).split(':');
  assert.deepEqual(res.g_proc.out, `Uid:\t${uid}\t${uid}\t${uid}\t${uid}\nGid:\t${gid}\t${gid}\t${gid}\t${gid}\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n`);
  assert.deepEqual(res.g_rootfs, { rc: 1, out: 'touch: cannot touch \'/var/x\': Read-only file system\n', err: 'touch: cannot touch \'/usr/local/bin/x\': Read-only file system\n' });
  assert.deepEqual(res.g_data, { rc: 0, out: 'postgres 700\n15\n', err: '' });
  assert.equal(fs.readFileSync(path.join(named['postgres-data'], 'PG_VERSION'), 'utf8'), '15\n');
  assert.deepEqual(res.m1_proc.out, 'Uid:\t10001\t10001\t10001\t10001\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n');

  // memoryd-pg-1 stopped cleanly; the proxy passed every request to memoryd-pg-2.
  assert.equal(res.m1_exit.rc, 0, diag);
  for (let i = 0; i < 6; i++) assert.deepEqual(body(res[`after_${i}`]), { status: 200, body: VIEW, rc: 0, err: '' }, `after ${i}${diag}`);
  assert.deepEqual(body(res.create_after).status, 200);
  assert.match(l1.at(-1).msg, /^stopped$/);

  // Stopped by their stop signals with status 0; PostgreSQL came back on its volume as it
  // was (no second initdb), the data there.
  assert.deepEqual([res.p_exit.rc, res.m2_exit.rc, res.g_exit.rc], [0, 0, 0], diag);
  assert.deepEqual(res.again_files, { rc: 0, out: 'team-a /memories/after.md 23\nteam-a /memories/shared.md 10\n', err: '' }, text('postgres-again', 'stderr'));
  assert.doesNotMatch(text('postgres-again', 'stderr'), /postgres-entrypoint/);
  assert.equal(res.g2_exit.rc, 0);
  // Without a password, the first start refuses, saying why, and makes nothing.
  assert.equal(res.g3_exit.rc, 1);
  assert.equal(text('postgres-nopw', 'stderr'), 'postgres-entrypoint: MEMORYD_PG_PASSWORD is empty: the first start sets the password of the role memoryd from it (docker/README.md, the postgres profile)\n');
  assert.deepEqual(fs.readdirSync(named['postgres-data-2']), []);
});
