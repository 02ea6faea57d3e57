/** Makes a synthetic preset's GGUF off the main thread: gets its name, posts back the bytes (transferred). */
import { makeSyntheticModel } from '../bench/synthetic.ts';

self.onmessage = (e: MessageEvent<string>) => {
  try {
    const bytes = makeSyntheticModel(e.data);
    self.postMessage(bytes, { transfer: [bytes.buffer] });
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
};
