import type { RoutingStrategy } from "../strategy";
import { CapabilityStrategy } from "./capability";
import { ContextWindowStrategy } from "./context-window";
import { CostAwareStrategy } from "./cost-aware";
import { FallbackStrategy } from "./fallback";
import { ModalityStrategy } from "./modality";

export { CapabilityStrategy, ContextWindowStrategy, CostAwareStrategy, FallbackStrategy, ModalityStrategy };

/** The seed's order, with the context-window check before cost sorting. */
export const defaultStrategies = (): RoutingStrategy[] => [ModalityStrategy, CapabilityStrategy, ContextWindowStrategy, CostAwareStrategy, FallbackStrategy];
