// Kubernetes: the custom resources (schemas, CRDs' source), typed clients with a per-call
// deadline, and the names (annotations, labels, finalizers) the controllers and the API share.
// crds.ts (CRD generation) is left out: only the build script and its test need it.
export * from './api-client.js';
export * from './resource-client.js';
export * from './resources.js';
export * from './resource-kinds.js';
export * from './site-resource.js';
export * from './form-resource.js';
export * from './sqlite-database-resource.js';
export {
  FORM_APPLIED_ANNOTATION,
  FORM_FINALIZER,
  FORM_ID_ANNOTATION,
  FORM_ID_LABEL,
  MANAGED_BY_LABEL,
  SITE_FINALIZER,
  SITE_ID_ANNOTATION,
  SITE_LABEL,
  SiteResources,
  kubeClients,
  kubeConfigFromEnvironment,
  type KubeClients,
} from './client.js';
