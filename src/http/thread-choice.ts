import { fail } from "../core/errors";

/**
 * The thread a request names in its body (`thread_id`) or in `X-Thread-Id`. Both may be sent, but
 * they must agree: picking one silently would run the turn on a thread the caller did not mean
 * (and leave the other without its turn), so two different ids are 400 BEM-130.
 */
export function namedThread(bodyThread: string | undefined, headerThread: string | undefined): string | undefined {
  if (bodyThread !== undefined && headerThread !== undefined && bodyThread !== headerThread) {
    fail("BEM-130", `thread_id '${bodyThread}' and X-Thread-Id '${headerThread}' name different threads; send one, or the same id in both`);
  }
  return bodyThread ?? headerThread;
}
