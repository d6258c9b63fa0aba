import { stringify } from 'yaml';
import { z } from 'zod';
import { resourceKinds, type ResourceKind } from './resource-kinds.js';
import { GROUP, VERSION } from './resources.js';

type JsonSchema = { [key: string]: unknown };

/**
 * Turns zod's JSON Schema into a Kubernetes structural schema: drops what CRDs reject or do not
 * need ($schema, `additionalProperties: false`, zod's safe-integer bounds) and keeps the rest
 * (types, patterns, enums, defaults, descriptions, x-kubernetes-* extensions from .meta()).
 */
function structural(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(structural);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema as JsonSchema)) {
    if (key === '$schema') continue;
    if (key === 'additionalProperties' && value === false) continue;
    if ((key === 'minimum' || key === 'maximum') && Math.abs(value as number) === Number.MAX_SAFE_INTEGER)
      continue;
    if (key === 'properties') {
      out[key] = Object.fromEntries(Object.entries(value as JsonSchema).map(([k, v]) => [k, structural(v)]));
    } else {
      out[key] = structural(value);
    }
  }
  if (out.type === 'integer' && out.format === undefined) out.format = 'int64';
  return out;
}

function schemaOf(kind: ResourceKind): JsonSchema {
  const jsonSchema = (s: z.ZodType): unknown =>
    // io 'input': fields with defaults stay optional, and the API server applies the default.
    structural(z.toJSONSchema(s, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' }));
  return {
    type: 'object',
    description: kind.description,
    required: ['spec'],
    // Names become label values and parts of derived names (site-<name>-api-key): keep them short.
    'x-kubernetes-validations': [
      { rule: 'self.metadata.name.size() <= 63', message: 'metadata.name must be at most 63 characters' },
    ],
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: jsonSchema(kind.spec),
      status: jsonSchema(kind.status),
    },
  };
}

/** The CustomResourceDefinition of one kind, as a plain object. */
export function crdFor(kind: ResourceKind): JsonSchema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${kind.plural}.${GROUP}`, labels: { 'app.kubernetes.io/part-of': 'hostplane' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: kind.kind,
        listKind: `${kind.kind}List`,
        plural: kind.plural,
        singular: kind.singular,
        shortNames: kind.shortNames,
        categories: ['hostplane'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: kind.printerColumns,
          schema: { openAPIV3Schema: schemaOf(kind) },
        },
      ],
    },
  };
}

/** Every CRD, in the YAML committed under crds/ (one file per kind). */
export function crdFiles(): { file: string; yaml: string }[] {
  return resourceKinds.map((kind) => ({
    file: `${kind.plural}.${GROUP}.yaml`,
    yaml:
      '# Generated from src/kube/resources.ts by `npm run crds`; do not edit.\n' +
      stringify(crdFor(kind), { lineWidth: 0 }),
  }));
}
