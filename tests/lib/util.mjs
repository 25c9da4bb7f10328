// Small pure helpers shared by the Node tests (no I/O):
//   formatSize(bytes)  memoryd's size format (docs/behaviour.md §4.1), e.g. 512 -> "512B",
//                      1536 -> "1.5K".
//   mulberry32(seed)   a deterministic PRNG: returns () => a number in [0, 1), the same
//                      sequence for the same seed on every run.
//   underValgrind      true when memoryd runs under valgrind (scripts/valgrind.sh)
//   volume(full, vg)   `full`, or `vg` under valgrind: the size of a test's load

// Size format of docs/behaviour.md §4.1: <1024 "{n}B"; else one decimal rounded half up,
// K/M/G (1024-based); the unit is the largest whose unrounded value is >= 1.
export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes}B`;
  const units = ['K', 'M', 'G'];
  let u = 0;
  let div = 1024;
  while (u < 2 && Math.floor(bytes / div) >= 1024) {
    div *= 1024;
    u++;
  }
  let tenths = Math.floor((bytes * 10) / div);
  if (((bytes * 10) % div) * 2 >= div) tenths++;
  return `${Math.floor(tenths / 10)}.${tenths % 10}${units[u]}`;
}

// Deterministic pseudo-random numbers (mulberry32).
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Under valgrind (scripts/valgrind.sh sets MD_TEST_WRAPPER to its command line) memoryd runs some
// 30 times slower, and each memoryd start costs seconds. That pass looks for memory errors in the
// code paths memoryd takes, which do not need the volume that the plain and sanitizer runs use to
// find races, limits and lost updates: there, tests scale their repetitions (clients, rounds,
// sizes, restarts) down to what still takes every path at least once, with every assertion kept.
// The plain and ASan runs keep the full volume.
export const underValgrind = (process.env.MD_TEST_WRAPPER ?? '').includes('valgrind');
export const volume = (full, vg) => (underValgrind ? vg : full);
