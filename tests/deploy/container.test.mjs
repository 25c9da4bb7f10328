// The container deployment: docker/Dockerfile, docker/proxy.Dockerfile, docker/compose.yaml.
//
// No container engine runs here or in CI (the docker CLI is only a client), so:
//  - the files are linted: dockerfile-utils for the Dockerfiles, the compose-spec JSON
//    schema (as shipped in dclint) with ajv, and dclint, for compose.yaml; shellcheck for
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
//    and requests go through the proxy to memoryd.
// What this does not cover: the real debian:12-slim (this machine's root has more in it;
// the libraries memoryd needs are checked against install-runtime.sh instead), BuildKit
// and the Docker engine themselves, port publishing, and Docker's DNS.
//
// The sandbox tests need root, unshare and overlayfs (CI has them). They do not depend on
// which memoryd build ctest gives (they build their own), so they run in the plain build.
import assert from 'node:assert/strict';
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

let YAML, Ajv, addFormats;
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
  Ajv = req('ajv').default;
  addFormats = req('ajv-formats').default;
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const memorydStages = () => parseDockerfile(readDocker('Dockerfile'));
const proxyStages = () => parseDockerfile(readDocker('proxy.Dockerfile'));
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
  for (const f of ['Dockerfile', 'proxy.Dockerfile']) {
    assert.deepEqual(validate(readDocker(f), ALL_RULES_ERROR()).map((d) => `${d.range.start.line + 1}: ${d.message}`), [], f);
  }
  const bad = 'from debian:12-slim\nMAINTAINER x\nWORKDIR relative\nCMD ["a"]\nCMD [\'b\']\n';
  assert.deepEqual(validate(bad, ALL_RULES_ERROR()).map((d) => d.range.start.line + 1).sort(), [1, 2, 3, 4, 5]);
});

// The scripts a RUN step may call: each is run outside a container by a test below.
const RUN_SCRIPTS = ['scripts/setup.sh', 'scripts/build.sh', '/usr/local/lib/memoryd/install-runtime.sh', '/usr/local/lib/memoryd/install-proxy.sh'];

test('the Dockerfiles: debian:12-slim by tag, every RUN a tested script, non-root memoryd, health checks, signals', () => {
  const [build, runtime] = memorydStages();
  const [proxy] = proxyStages();
  for (const s of [build, runtime, proxy]) assert.deepEqual(s.from, { image: 'debian', tag: '12-slim', digest: null });
  assert.deepEqual([build.name, runtime.name, memorydStages().length, proxyStages().length], ['build', 'runtime', 2, 1]);
  for (const s of [build, runtime, proxy]) {
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
  // The digest approach is written down where the tag is.
  for (const f of ['Dockerfile', 'proxy.Dockerfile']) assert.match(readDocker(f), /pin (its|the)\s+(# )?digest/);
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
});

function composeValidator() {
  // The compose-spec schema (compose-spec/compose-spec, schema/compose-spec.json) as
  // dclint ships it; draft-07 (its $schema names the https URL, which ajv knows as http).
  const schema = JSON.parse(fs.readFileSync(path.join(DOCKER, 'node_modules/dclint/schemas/compose.schema.json'), 'utf8'));
  assert.equal(schema.$schema, 'https://json-schema.org/draft-07/schema');
  assert.equal(schema.title, 'Compose Specification');
  delete schema.$schema;
  const ajv = new Ajv({ allErrors: true, strictSchema: false, strictTypes: false, allowUnionTypes: true, logger: false });
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
  ];
  for (const [mutate, [at, message]] of broken) {
    const d = structuredClone(doc);
    mutate(d);
    assert.equal(validate(d), false);
    assert.ok(validate.errors.some((e) => e.instancePath === at && e.message === message), JSON.stringify(validate.errors.map((e) => [e.instancePath, e.message])));
  }
});

test('compose.yaml passes dclint with every default rule', async () => {
  const r = await run(path.join(DOCKER, 'node_modules/.bin/dclint'), ['-f', 'json', 'compose.yaml'], { cwd: DOCKER });
  const report = JSON.parse(r.stdout);
  assert.deepEqual([r.code, report.map((f) => [f.filePath, f.messages])], [0, [['compose.yaml', []]]]);
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
  // memoryd: on the internal network only, nothing published; the proxy: published on the
  // host's loopback at nginx's listen port; upstream = the memoryd service at its port.
  assert.deepEqual([memoryd.networks, memoryd.ports, doc.networks.backend.internal], [['backend'], undefined, true]);
  assert.deepEqual(proxy.ports, ['127.0.0.1:8080:8080']);
  assert.match(conf, /\n        listen 8080;\n/);
  assert.match(conf, new RegExp(`\\n        server memoryd:${image.env.MEMORYD_PORT};\\n`));
  assert.deepEqual(proxy.depends_on, { memoryd: { condition: 'service_healthy' } });
  // The database on the named volume, at the image's VOLUME.
  assert.deepEqual(memoryd.volumes, [`memoryd-data:${image.volumes[0]}`]);
  assert.deepEqual(doc.volumes, { 'memoryd-data': {} });
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

test('shellcheck: the scripts the images run are clean', async () => {
  const scripts = ['install-runtime.sh', 'install-proxy.sh', 'healthcheck.sh'];
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
