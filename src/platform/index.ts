// The platform domain's public face: accounts, plans, sites and routing, API keys, usage.
export * from './platform.js';
export * from './plans.js';
