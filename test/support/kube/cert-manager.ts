import type { CustomObjectsApi } from '@kubernetes/client-node';
import { apiStatus } from '../../../src/kube/client.js';

/** cert-manager's Certificate kind, for the CustomObjectsApi calls of the controller tests. */
export const certificateKind = { group: 'cert-manager.io', version: 'v1', plural: 'certificates' };

/** The status cert-manager writes once a Certificate is issued (Ready=True, notAfter). */
export function issuedStatus(
  message = 'Certificate is up to date and has not expired',
): Record<string, unknown> {
  return {
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Ready',
        message,
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    ],
    notAfter: '2027-02-26T07:00:00Z',
  };
}

/** Plays cert-manager: writes a Certificate's status (read-modify-write, retried on 409). */
export async function setCertificateStatus(
  custom: CustomObjectsApi,
  namespace: string,
  name: string,
  status: Record<string, unknown>,
): Promise<void> {
  for (;;) {
    const current = (await custom.getNamespacedCustomObject({
      ...certificateKind,
      namespace,
      name,
    })) as object;
    try {
      await custom.replaceNamespacedCustomObjectStatus({
        ...certificateKind,
        namespace,
        name,
        body: { ...current, status },
      });
      return;
    } catch (err) {
      if (apiStatus(err) !== 409) throw err;
    }
  }
}
