// Run by test/pack.test.mjs inside a fresh npm project that installed the package's `npm pack`
// tarball and @anthropic-ai/sdk from the registry: one tool-runner round trip with the memory
// tool and memory_search against the memoryd at MEMORYD_URL and the scripted Messages API at
// ANTHROPIC_BASE_URL, then an error from the client, checked against the project's own SDK.
// Prints one JSON line for the test to check.
import Anthropic from '@anthropic-ai/sdk';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { MemorydClient, MemorydError, memorydMemoryTool, memorydSearchTool } from '@memoryd/client';

const memoryd = new MemorydClient({ baseUrl: process.env.MEMORYD_URL, tenant: 'pack' });
const anthropic = new Anthropic({ apiKey: 'test-key', baseURL: process.env.ANTHROPIC_BASE_URL, maxRetries: 0 });
const final = await anthropic.beta.messages
  .toolRunner({
    model: 'claude-opus-4-6',
    max_tokens: 1024,
    messages: [{ role: 'user', content: 'Remember that the release ships on Friday.' }],
    tools: [memorydMemoryTool(memoryd), memorydSearchTool(memoryd)],
  })
  .runUntilDone();

let error;
try {
  await memoryd.version(999999);
} catch (e) {
  error = e;
}
console.log(
  JSON.stringify({
    final: final.content,
    error: {
      instanceofToolError: error instanceof ToolError,
      instanceofMemorydError: error instanceof MemorydError,
      kind: error?.kind,
      status: error?.status,
      content: error?.content,
    },
  }),
);
