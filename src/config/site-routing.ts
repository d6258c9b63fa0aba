import { AppError } from '../errors/index.js';

// Site TLS and routing in cluster mode (controllers/site: certificates.ts, httproute.ts), from the
// HOSTPLANE_TLS_* and HOSTPLANE_ROUTING_MODE / HOSTPLANE_GATEWAY_* variables env-schema.ts parses.

export interface SiteTlsConfig {
  /** The cert-manager issuer of the custom domains' Certificates (a Site's spec.tls overrides it). */
  issuer?: { kind: 'ClusterIssuer' | 'Issuer'; name: string };
  /** A kubernetes.io/tls Secret for `*.<sites domain>`, served on every slug host. */
  wildcardSecret?: string;
}

export type RoutingConfig =
  | { mode: 'ingress' }
  | {
      mode: 'gateway';
      /** The Gateway (or one listener of it, sectionName) every Site's HTTPRoute attaches to. */
      parentRef: { name: string; namespace: string; sectionName?: string };
      /**
       * Set when the controller adds one HTTPS listener per custom domain to that Gateway (each
       * with its domain's certificate), on this port; the Site's HTTPRoute attaches to them too.
       */
      listeners?: { httpsPort: number };
    };

/** The parsed variables siteRouting() reads. */
export interface SiteRoutingEnv {
  HOSTPLANE_TLS_ISSUER_NAME: string;
  HOSTPLANE_TLS_ISSUER_KIND: 'ClusterIssuer' | 'Issuer';
  HOSTPLANE_TLS_WILDCARD_SECRET: string;
  HOSTPLANE_ROUTING_MODE: 'ingress' | 'gateway';
  HOSTPLANE_GATEWAY_NAME: string;
  HOSTPLANE_GATEWAY_NAMESPACE: string;
  HOSTPLANE_GATEWAY_SECTION: string;
  HOSTPLANE_GATEWAY_LISTENERS: boolean;
  HOSTPLANE_GATEWAY_HTTPS_PORT: number;
}

/** The Site TLS and routing settings; only those set (so a config without them is unchanged). */
export function siteRouting(
  c: SiteRoutingEnv,
  ownNamespace: string,
): { tls?: SiteTlsConfig; routing?: RoutingConfig } {
  const tls: SiteTlsConfig = {
    ...(c.HOSTPLANE_TLS_ISSUER_NAME
      ? { issuer: { kind: c.HOSTPLANE_TLS_ISSUER_KIND, name: c.HOSTPLANE_TLS_ISSUER_NAME } }
      : {}),
    ...(c.HOSTPLANE_TLS_WILDCARD_SECRET ? { wildcardSecret: c.HOSTPLANE_TLS_WILDCARD_SECRET } : {}),
  };
  const out: { tls?: SiteTlsConfig; routing?: RoutingConfig } = Object.keys(tls).length > 0 ? { tls } : {};
  if (c.HOSTPLANE_ROUTING_MODE === 'gateway') {
    if (!c.HOSTPLANE_GATEWAY_NAME) {
      throw new AppError('CONFIG_INVALID', {
        message:
          'invalid configuration:\n  HOSTPLANE_GATEWAY_NAME: required when HOSTPLANE_ROUTING_MODE=gateway',
      });
    }
    out.routing = {
      mode: 'gateway',
      parentRef: {
        name: c.HOSTPLANE_GATEWAY_NAME,
        namespace: c.HOSTPLANE_GATEWAY_NAMESPACE || ownNamespace,
        ...(c.HOSTPLANE_GATEWAY_SECTION ? { sectionName: c.HOSTPLANE_GATEWAY_SECTION } : {}),
      },
      ...(c.HOSTPLANE_GATEWAY_LISTENERS ? { listeners: { httpsPort: c.HOSTPLANE_GATEWAY_HTTPS_PORT } } : {}),
    };
  }
  return out;
}
