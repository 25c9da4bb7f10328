// A small ustar/pax writer for tests that need archives GNU tar will not make (names with
// "..", entries of every type, damaged data) or that stream a large archive without a file.
// Names over 100 bytes get a pax extended header ("path=").

function octal(n, width) {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header({ name, size = 0, type = '0', linkname = '', mode, mtime = 1700000000 }) {
  const h = Buffer.alloc(512);
  const nameBuf = Buffer.from(name);
  if (nameBuf.length > 100) throw new Error(`header: ${name} is longer than 100 bytes`);
  nameBuf.copy(h, 0);
  h.write(octal(mode ?? (type === '5' ? 0o755 : 0o644), 8), 100, 'latin1');
  h.write(octal(0, 8), 108, 'latin1');
  h.write(octal(0, 8), 116, 'latin1');
  h.write(octal(size, 12), 124, 'latin1');
  h.write(octal(mtime, 12), 136, 'latin1');
  h.fill(' ', 148, 156);
  h.write(type, 156, 'latin1');
  Buffer.from(linkname).copy(h, 157);
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'latin1');
  return h;
}

function pad(n) {
  return Buffer.alloc((512 - (n % 512)) % 512);
}

function paxRecord(key, value) {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

// One entry: {name, data (string or Buffer; files), type ('0' file, '5' directory, '2' symlink,
// '1' hard link, '6' fifo, ...), linkname, mode, size (announced size, to damage an entry)}.
export function tarEntry(e) {
  const data = e.data === undefined ? Buffer.alloc(0) : Buffer.from(e.data);
  const parts = [];
  let name = e.name;
  if (Buffer.byteLength(name) > 100) {
    const pax = Buffer.from(paxRecord('path', name));
    parts.push(header({ name: 'PaxHeader/long', size: pax.length, type: 'x' }), pax, pad(pax.length));
    name = 'long-name-in-pax-header';
  }
  parts.push(header({ ...e, name, size: e.size ?? data.length }), data, pad(data.length));
  return Buffer.concat(parts);
}

// A whole archive: the entries, then the two zero blocks of its end.
export function tarArchive(entries) {
  return Buffer.concat([...entries.map(tarEntry), Buffer.alloc(1024)]);
}
