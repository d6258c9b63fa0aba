import type { ScreenProps } from '../routes.js';
import { SiteFrame } from './site-nav.js';

/** The site's files: a browser of its folders (filled in by the file browser work). */
export function SiteFiles({ params }: ScreenProps) {
  return (
    <SiteFrame siteId={params.siteId!} title="Files">
      <p>The file browser comes here.</p>
    </SiteFrame>
  );
}
