/** The fixed seed every fast-check property runs with unless it names its own (see test/setup.ts). */
export const PROPERTY_SEED = 20261130;
