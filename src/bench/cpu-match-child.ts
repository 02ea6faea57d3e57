/**
 * The child process of llamaCppGreedyIsolated (./cpu-match.ts): reads `{ modelPath, promptIds, nTokens }`
 * as JSON on stdin, runs llamaCppGreedy, writes `{ ref }` or `{ error }` as one JSON line on stdout. A
 * native abort inside llama.cpp ends only this process.
 */
import { llamaCppGreedy } from './cpu-match.ts';

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  input += d;
});
process.stdin.on('end', async () => {
  try {
    const { modelPath, promptIds, nTokens } = JSON.parse(input) as {
      modelPath: string;
      promptIds: number[];
      nTokens: number;
    };
    const ref = await llamaCppGreedy(modelPath, promptIds, nTokens);
    process.stdout.write(`${JSON.stringify({ ref })}\n`);
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ error: (e as Error)?.message ?? String(e) })}\n`);
  }
  process.exit(0);
});
