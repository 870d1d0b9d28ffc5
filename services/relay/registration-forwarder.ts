/**
 * register_relay's delivery. The original chain client served the relay routes and pushed each swap event
 * to the relay server's `relay_server_url` itself; here the relay and the chain client are two services, so
 * the relay hands the URLs to the chain client's `POST /support/register` (`relay.chainClientRegisterUrl`),
 * whose per-event callback keys are the same (on_transfer_out, …), not merged: one event per post, as the
 * original pushed them.
 *
 * The chain client may keep registrations in memory (the original does: spec/otmoic.md §4), so the stored
 * registration is handed over again every `relay.reregisterSeconds`, and at start: a chain client that
 * restarted delivers again without the relay server noticing. "Already registered" is success.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../../shared/logging/logger.js';
import { registerCallbacks, unregisterCallbacks } from '../../shared/otmoic/support-register.js';

export type ForwardOutcome = 'registered' | 'already_registered' | 'failed';

export interface RegistrationForwarderOptions {
  /** The chain client's `/support/register` URL. */
  registerUrl: string;
  /** The stored registration of this deployment (the latest register_relay), if any. */
  stored: () => Promise<Record<string, string> | undefined>;
  /** The set the chain client holds from us (the last one it took), and recording a new one. */
  forwarded: {
    get(): Promise<Record<string, string> | undefined>;
    set(callbacks: Record<string, string>): Promise<void>;
  };
  intervalMs: number;
  log: Logger;
  /** The process stops: a hand-over in flight is aborted rather than waited for (ServiceContext.stopSignal). */
  stopSignal?: AbortSignal;
  onOutcome?: (outcome: ForwardOutcome) => void;
}

export class RegistrationForwarder {
  private timer: NodeJS.Timeout | undefined;
  private failing = false;
  /** What log lines name of the chain client: the register URL's origin, never its path or query (a token). */
  private readonly chainClient: string;

  constructor(private readonly options: RegistrationForwarderOptions) {
    this.chainClient = new URL(options.registerUrl).origin;
  }

  /**
   * Hands `callbacks` to the chain client; throws when it cannot be reached or refuses them. Once taken, the
   * set it held from us before is removed there when it differs (else URLs in both sets would get every event
   * twice, and a dropped URL would keep getting them): best effort, logged.
   */
  async forward(callbacks: Record<string, string>): Promise<void> {
    try {
      const outcome = await registerCallbacks(
        this.options.registerUrl,
        callbacks,
        false,
        this.options.stopSignal,
      );
      this.options.onOutcome?.(outcome === 'registered' ? 'registered' : 'already_registered');
      if (this.failing || outcome === 'registered')
        this.options.log.info(
          { callbacks: Object.keys(callbacks), outcome, chainClient: this.chainClient },
          'relay server callbacks registered with the chain client',
        );
      this.failing = false;
    } catch (error) {
      this.options.onOutcome?.('failed');
      throw error;
    }
    try {
      const previous = await this.options.forwarded.get();
      const replaced =
        previous === undefined || isDeepStrictEqual(previous, callbacks) || (await this.remove(previous));
      // Not removed: the old set stays recorded, so the next hand-over tries again.
      if (replaced) await this.options.forwarded.set(callbacks);
    } catch (error) {
      // The chain client took the new set; the old one is removed on the next hand-over.
      this.options.log.warn(
        { err: (error as Error).message.slice(0, 300) },
        'recording the relay server callbacks handed to the chain client failed',
      );
    }
  }

  /** Removes a set at the chain client; false when that failed (logged). */
  private async remove(previous: Record<string, string>): Promise<boolean> {
    const unregisterUrl = unregisterUrlOf(this.options.registerUrl);
    if (unregisterUrl === undefined) return true; // not our chain client: nothing to remove it with
    try {
      const outcome = await unregisterCallbacks(unregisterUrl, previous, false, this.options.stopSignal);
      this.options.log.info(
        { callbacks: Object.keys(previous), outcome },
        'previous relay server callbacks removed',
      );
      return true;
    } catch (error) {
      this.options.log.warn(
        { err: (error as Error).message.slice(0, 300), chainClient: this.chainClient },
        'removing the previous relay server callbacks failed; tried again at the next hand-over',
      );
      return false;
    }
  }

  /** Hands over the stored registration now and every intervalMs. */
  start(): void {
    const tick = async () => {
      try {
        const callbacks = await this.options.stored();
        if (callbacks !== undefined) await this.forward(callbacks);
      } catch (error) {
        // Once per failing streak: the chain client may be down for a while.
        if (!this.failing)
          this.options.log.warn(
            { err: (error as Error).message.slice(0, 300), chainClient: this.chainClient },
            'handing the relay server callbacks to the chain client failed; retried every interval',
          );
        this.failing = true;
      }
      if (this.timer !== undefined) this.timer = setTimeout(tick, this.options.intervalMs).unref();
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** Our chain client's unregister route beside its register route (…/register → …/unregister), if it is one. */
function unregisterUrlOf(registerUrl: string): string | undefined {
  const url = new URL(registerUrl);
  if (!url.pathname.endsWith('/register')) return undefined;
  url.pathname = url.pathname.replace(/\/register$/, '/unregister');
  return url.toString();
}
