import type { Message } from "../core/message";
import { estimateTokens, type TokenEstimator } from "../core/tokens";
import type { ContextStrategy } from "./types";

/**
 * Keeps the newest messages that fit `maxTokens`: walks back from the newest and
 * stops at the first message that would overflow, so the kept turns are one
 * contiguous, most recent stretch of the conversation (never a gap in the middle).
 */
export class TokenLimitStrategy implements ContextStrategy {
  constructor(private readonly estimate: TokenEstimator = estimateTokens) {}

  apply(messages: Message[], maxTokens: number, tokensOf?: (m: Message) => number): Message[] {
    const cost = tokensOf ?? ((m: Message) => this.estimate(m));
    let used = 0;
    let start = messages.length;
    for (let i = messages.length - 1; i >= 0; i--) {
      const t = cost(messages[i]!);
      if (used + t > maxTokens) break;
      used += t;
      start = i;
    }
    return messages.slice(start);
  }
}
