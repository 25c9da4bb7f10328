// Carry out a Dockerfile without a container engine, in a throwaway root: each stage is an
// overlay mount whose lower layer is this machine's own root (Debian 12, like
// debian:12-slim but with more installed) and whose upper layer is a directory of the
// test; it is mounted in a private mount and PID namespace (unshare), so whatever a RUN
// step writes (packages, users, /etc) lands in that directory and never on the machine,
// and every process started there dies with the namespace. COPY copies files in, RUN runs
// the command chrooted with the image's environment, as `docker build` would.
//
// A container of an image is another overlay on top of the stage's layer, in a private
// network namespace too (only loopback, or the addresses the test gives it).
//
//   buildImage({dockerfile, ignore, context, dir, stageNetwork})  -> {stages: {name: {layer, config}}, log}
//   inNamespaces(script, {net, timeoutMs})  -> {code, stdout, stderr}  (bash, as root)
//   sh(s)                                    a shell-quoted string
import fs from 'node:fs';
import path from 'node:path';
import { buildContext, dockerignore, imageConfig, parseDockerfile } from './dockerfile.mjs';
import { run } from './deploy.mjs';

export const sh = (s) => `'${String(s).replaceAll("'", "'\\''")}'`;

// Docker's PATH when the image sets none.
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

// Run `script` with bash as root in new mount and PID namespaces (and a new network
// namespace with `net: 'private'`: loopback only, brought up). When the namespace's first
// process ends, the kernel ends every other one in it.
export function inNamespaces(script, { net = 'host', timeoutMs = 600000 } = {}) {
  // --mount-proc: /proc of the new PID namespace, so that /proc/<pid> names the
  // namespace's own processes (nsenter --net=/proc/$pid/ns/net must not reach the
  // machine's).
  const args = ['--mount', '--pid', '--fork', '--kill-child', '--propagation', 'private', '--mount-proc'];
  if (net === 'private') args.push('--net');
  const prelude = `set -euo pipefail\n${net === 'private' ? 'ip link set lo up\n' : ''}`;
  return run('unshare', [...args, 'bash', '-c', prelude + script], { timeoutMs });
}

// Shell lines that mount the overlay root `merged` from `layers` (upper-most first, the
// machine's root last) with the writable `upper` (then `between`, e.g. making mount
// points), plus /proc, /dev and an empty /tmp.
// An image layer lies inside '/', the bottom layer, and overlayfs refuses a lower layer
// inside another (ELOOP): the layers are copied to a tmpfs of this namespace first
// (whiteouts and overlay attributes included).
export function mountRoot({ layers, upper, work, merged, between = '', tmp = true }) {
  const copies = layers.map((l, i) => `${merged}-layers/${i}`);
  return `
mkdir -p ${sh(upper)} ${sh(work)} ${sh(merged)}
${layers.length ? `mkdir -p ${sh(`${merged}-layers`)} && mount -t tmpfs tmpfs ${sh(`${merged}-layers`)}` : ''}
${layers.map((l, i) => `cp -a --preserve=all ${sh(l)} ${sh(copies[i])}`).join('\n')}
mount -t overlay overlay -o ${sh(`lowerdir=${[...copies, '/'].join(':')},upperdir=${upper},workdir=${work}`)} ${sh(merged)}
${between}
mount -t proc proc ${sh(`${merged}/proc`)}
mount --rbind /dev ${sh(`${merged}/dev`)}
${tmp ? `mount -t tmpfs -o mode=1777 tmpfs ${sh(`${merged}/tmp`)}` : ''}
`;
}

// A container of image `image` (a built stage), as `docker run` / compose would make it,
// in directory `dir`:
//   env         extra environment (compose `environment:`), over the image's ENV
//   volumes     [{source, target, readOnly}]: a directory (a named volume: filled from the
//               image's content at `target` while empty, owner and mode included) or a
//               file (a bind mount)
//   tmpfs       [path]; readOnly (compose `read_only:`) makes the root read-only
//   capAdd, capDrop ('ALL' or names), noNewPrivileges (security_opt no-new-privileges)
//   hosts       {name: address} or [[name, address], ...] (a name may come twice, as compose's
//               extra_hosts allows), written to its /etc/hosts (Docker's DNS stand-in)
//   command     overrides CMD
// Returns bash: `setup` (mounts; run first, in the orchestrating namespace), `start`
// (the container's first process in the background, in a new network namespace unless
// `sharedNetwork`; its pid in $<pidVar>), `ready` (run after attaching its network
// interfaces: only then does that process start the image's command), and exec(argv) (a
// command line running argv in it as docker exec does: same user, environment, directory,
// capabilities and network).
const CAPS = ['chown', 'dac_override', 'fowner', 'fsetid', 'kill', 'setgid', 'setuid', 'setpcap', 'net_bind_service', 'net_raw', 'sys_chroot', 'mknod', 'audit_write', 'setfcap'];
export function container({ image, dir, env = {}, volumes = [], tmpfs = [], readOnly = false, capAdd = [], capDrop = [], noNewPrivileges = false, hosts = null, command = null, pidVar, sharedNetwork = false }) {
  const c = image.config;
  const m = `${dir}/merged`;
  // The image's users: its layer's /etc/passwd, else the machine's (the layer below it).
  const passwd = fs.readFileSync(fs.existsSync(`${image.layer}/etc/passwd`) ? `${image.layer}/etc/passwd` : '/etc/passwd', 'utf8');
  const users = passwd.split('\n').map((l) => l.split(':'));
  // USER: uid:gid, or a name (its uid and primary group, as Docker looks it up in the image).
  const byName = users.find((f) => f[0] === c.user);
  const [u, g] = c.user === 'root' ? ['0', '0'] : byName ? [byName[2], byName[3]] : c.user.split(':');
  if (!/^\d+$/.test(u) || !/^\d+$/.test(g ?? '')) throw new Error(`USER ${c.user}: the sandbox takes root, uid:gid or a user of the image`);
  // Docker's default capabilities, less cap_drop, plus cap_add.
  let caps = capDrop.includes('ALL') ? [] : CAPS.filter((x) => !capDrop.map((d) => d.toLowerCase()).includes(x));
  caps = [...new Set([...caps, ...capAdd.map((a) => a.toLowerCase())])];
  // HOME: the user's home in the image's passwd, as Docker sets it.
  const home = users.find((f) => f[2] === u)?.[5] ?? '/';
  const environment = { PATH: DEFAULT_PATH, HOME: home, ...c.env, ...env };
  const envArgs = Object.entries(environment).map(([k, v]) => sh(`${k}=${v}`)).join(' ');
  const mountpoints = [];
  const late = [];
  for (const v of volumes) {
    const isFile = fs.existsSync(v.source) && fs.statSync(v.source).isFile();
    mountpoints.push(isFile ? `[[ -e ${sh(m + v.target)} ]] || { mkdir -p ${sh(path.posix.dirname(m + v.target))}; touch ${sh(m + v.target)}; }` : `mkdir -p ${sh(m + v.target)}`);
    if (!isFile) {
      late.push(`if [[ -z "$(ls -A ${sh(v.source)})" ]]; then cp -a ${sh(`${m}${v.target}/.`)} ${sh(v.source)}; chown --reference=${sh(m + v.target)} ${sh(v.source)}; chmod --reference=${sh(m + v.target)} ${sh(v.source)}; fi`);
    }
    late.push(`mount --bind ${sh(v.source)} ${sh(m + v.target)}`);
    if (v.readOnly) late.push(`mount -o remount,bind,ro ${sh(m + v.target)}`);
  }
  for (const t of tmpfs) {
    mountpoints.push(`mkdir -p ${sh(m + t)}`);
    late.push(`mount -t tmpfs -o mode=1777,nosuid,nodev,noexec tmpfs ${sh(m + t)}`);
  }
  if (hosts) {
    fs.mkdirSync(dir, { recursive: true });
    const pairs = Array.isArray(hosts) ? hosts : Object.entries(hosts);
    fs.writeFileSync(`${dir}/hosts`, `127.0.0.1 localhost\n${pairs.map(([n, a]) => `${a} ${n}`).join('\n')}\n`);
    late.push(`mount --bind ${sh(`${dir}/hosts`)} ${sh(`${m}/etc/hosts`)}`);
  }
  const between = [...mountpoints, readOnly ? `mount --bind ${sh(m)} ${sh(m)}; mount -o remount,bind,ro ${sh(m)}` : ''].join('\n');
  const setup = mountRoot({ layers: [image.layer], upper: `${dir}/upper`, work: `${dir}/work`, merged: m, between, tmp: !tmpfs.includes('/tmp') }) + late.join('\n') + '\n';
  const argv = [...(c.entrypoint ?? []), ...(command ?? c.cmd ?? [])];
  const inside = (args) => [
    'chroot', sh(m), 'setpriv', `--reuid=${u}`, `--regid=${g}`, '--clear-groups',
    `--bounding-set=-all${caps.map((x) => `,+${x}`).join('')}`, `--inh-caps=-all${caps.map((x) => `,+${x}`).join('')}`,
    ...(noNewPrivileges ? ['--no-new-privs'] : []),
    '/usr/bin/env', '-i', envArgs,
    '/bin/sh', '-c', sh('cd "$0" && exec "$@"'), sh(c.workdir), ...args.map(sh),
  ].join(' ');
  // As Docker attaches a container's networks before its first process starts, that
  // process waits in its new network namespace until `ready` (run once the caller has
  // attached the interfaces) says so; then the same pid goes on to be the container's.
  const flag = `${dir}/network-ready`;
  const start = sharedNetwork
    ? `${inside(argv)} >${sh(`${dir}/stdout`)} 2>${sh(`${dir}/stderr`)} &\n${pidVar}=$!\n`
    : `rm -f ${sh(flag)}\nunshare --net -- sh -c 'while [ ! -e "$0" ]; do sleep 0.01; done; exec "$@"' ${sh(flag)} ${inside(argv)} >${sh(`${dir}/stdout`)} 2>${sh(`${dir}/stderr`)} &\n${pidVar}=$!\n`;
  const ready = sharedNetwork ? ':' : `touch ${sh(flag)}`;
  const exec = (args) => `${sharedNetwork ? '' : `nsenter --net=/proc/$${pidVar}/ns/net -- `}${inside(args)}`;
  return { setup, start, ready, exec, merged: m };
}

// Build every stage of `dockerfile` (a path) with the build context `context` (a
// directory) filtered by the .dockerignore text `ignore`. Each stage's layer is
// <dir>/<stage>/upper. Returns the stages by name (an unnamed stage is 'stage<N>').
export async function buildImage({ dockerfile, ignore, context, dir, timeoutMs = 900000 }) {
  const stages = parseDockerfile(fs.readFileSync(dockerfile, 'utf8'));
  const files = buildContext(context, dockerignore(ignore));
  const list = path.join(dir, 'context.list');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(list, files.join('\n') + '\n');
  const built = {};
  let log = '';
  for (const [n, stage] of stages.entries()) {
    const name = stage.name ?? `stage${n}`;
    if (`${stage.from.image}:${stage.from.tag}` !== 'debian:12-slim') throw new Error(`stage ${name}: FROM ${stage.from.image}:${stage.from.tag}, the sandbox stands in for debian:12-slim only`);
    const root = path.join(dir, name);
    const m = `${root}/merged`;
    const lines = [mountRoot({ layers: [], upper: `${root}/upper`, work: `${root}/work`, merged: m })];
    let cwd = '/';
    let user = null;
    const env = {};
    for (const s of stage.steps) {
      if (s.op === 'workdir') {
        cwd = path.posix.resolve(cwd, s.path);
        lines.push(`mkdir -p ${sh(m + cwd)}`);
      } else if (s.op === 'env') {
        Object.assign(env, Object.fromEntries(s.vars));
      } else if (s.op === 'user') {
        user = s.user;
      } else if (s.op === 'copy') {
        if (Object.keys(s.flags).some((f) => f !== 'from')) throw new Error(`COPY flags ${Object.keys(s.flags)}: not carried out by the sandbox`);
        const dest = path.posix.resolve(cwd, s.dest);
        const intoDir = s.dest.endsWith('/') || s.sources.length > 1 || s.dest === '.';
        if (s.from) {
          const src = built[s.from];
          if (!src) throw new Error(`COPY --from=${s.from}: no such stage before`);
          // From the earlier stage's root: its layer, else the machine's root below it.
          // (Mounting that stage's overlay here is refused: its layer lies inside '/'.)
          for (const f of s.sources) {
            const target = intoDir ? `${dest}/${path.posix.basename(f)}` : dest;
            const layered = `${src.layer}${f}`;
            lines.push(`src=${sh(layered)}; [[ -f "$src" ]] || src=${sh(f)}`,
              `install -D -o 0 -g 0 -m "$(stat -c %a "$src")" "$src" ${sh(m + target)}`);
          }
        } else if (s.sources.length === 1 && s.sources[0] === '.') {
          lines.push(`mkdir -p ${sh(m + dest)}`,
            `tar -C ${sh(context)} --owner=0 --group=0 --numeric-owner -cf - -T ${sh(list)} | tar -C ${sh(m + dest)} -xpf -`);
        } else {
          for (const f of s.sources) {
            if (!files.includes(f)) throw new Error(`COPY ${f}: not in the build context (or excluded by .dockerignore)`);
            const target = intoDir ? `${dest}/${path.posix.basename(f)}` : dest;
            lines.push(`install -D -o 0 -g 0 -m "$(stat -c %a ${sh(`${context}/${f}`)})" ${sh(`${context}/${f}`)} ${sh(m + target)}`);
          }
        }
      } else if (s.op === 'run') {
        if (user) throw new Error('RUN after USER: not carried out by the sandbox');
        const envArgs = Object.entries({ PATH: DEFAULT_PATH, HOME: '/root', ...env }).map(([k, v]) => sh(`${k}=${v}`)).join(' ');
        const argv = s.exec ?? ['/bin/sh', '-c', s.shell];
        // As `docker build`: chrooted, the image's environment only, in WORKDIR.
        lines.push(`echo ${sh(`== ${name}: RUN ${s.shell}`)} >&2`,
          `chroot ${sh(m)} /usr/bin/env -i ${envArgs} /bin/sh -c 'cd "$0" && exec "$@"' ${sh(cwd)} ${argv.map(sh).join(' ')}`);
      }
    }
    const r = await inNamespaces(lines.join('\n'), { timeoutMs });
    log += r.stdout + r.stderr;
    if (r.code !== 0) throw new Error(`stage ${name} failed (${r.code} ${r.signal ?? ''}):\n${r.stdout}${r.stderr}`);
    built[name] = { layer: `${root}/upper`, config: imageConfig(stage), stage };
  }
  return { stages: built, files, log };
}
