/**
 * What the page's views share: the engine worker, the loaded model, the device, and which long task holds
 * the engine (one at a time: a load, a benchmark or a chat answer). Views listen for `change` events.
 */
import { benchDeviceFromSnapshot } from '../bench/device.ts';
import type { BenchDevice, BenchResult } from '../bench/types.ts';
import type { ModelInfo } from '../engine/types.ts';
import { WorkerEngine } from '../engine/worker-api.ts';
import type { AdapterSnapshot } from './gpu-report.ts';

/** A model loaded in the engine. */
export interface LoadedModel {
  info: ModelInfo;
  /** Id used in results: the file name without `.gguf`, the URL's file name, or the synthetic preset id. */
  id: string;
  /** How it was chosen, for display ("stories260K.gguf (file)"). */
  sourceLabel: string;
  synthetic: boolean;
  /** Size of the GGUF file in bytes. */
  fileBytes: number;
  load: BenchResult['load'];
}

/** Roofline measurements of this device (from "Measure GPU"). */
export interface DeviceMeasurement {
  bandwidthGBs: number;
  matmulGflops?: number;
  measuredAt: string;
}

export type Task = 'load' | 'bench' | 'chat';

export class Session extends EventTarget {
  private worker: WorkerEngine | undefined;
  model: LoadedModel | undefined;
  /** The page's adapter (from the GPU probe), once known. */
  adapter: AdapterSnapshot | undefined;
  measurement: DeviceMeasurement | undefined;
  /** The long task that holds the engine now. */
  task: Task | undefined;
  /** Last finished benchmark result. */
  lastResult: BenchResult | undefined;

  /** The engine worker, started on first use. */
  get engine(): WorkerEngine {
    this.worker ??= new WorkerEngine(
      new Worker(new URL('../../workers/engine.worker.ts', import.meta.url), { type: 'module' }),
    );
    return this.worker;
  }

  /** Throws away the worker (after a device loss), so the next use starts a fresh one. */
  async resetEngine(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.setModel(undefined);
    await w?.terminate();
  }

  /** Claims the engine for a task; false when another task holds it. */
  begin(task: Task): boolean {
    if (this.task) return false;
    this.task = task;
    this.changed();
    return true;
  }

  end(task: Task): void {
    if (this.task === task) this.task = undefined;
    this.changed();
  }

  setModel(m: LoadedModel | undefined): void {
    this.model = m;
    this.changed();
  }

  setAdapter(a: AdapterSnapshot | undefined): void {
    this.adapter = a;
    this.changed();
  }

  setMeasurement(m: DeviceMeasurement | undefined): void {
    this.measurement = m;
    this.changed();
  }

  setLastResult(r: BenchResult | undefined): void {
    this.lastResult = r;
    this.changed();
  }

  /** The device block of a result, from the page's adapter. */
  benchDevice(): BenchDevice | undefined {
    return this.adapter ? benchDeviceFromSnapshot(this.adapter, navigator.userAgent) : undefined;
  }

  changed(): void {
    this.dispatchEvent(new Event('change'));
  }
}
