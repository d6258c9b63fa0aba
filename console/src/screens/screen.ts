/** What the route table hands every screen (routes.tsx names the screens; screens never import it). */
export interface ScreenProps {
  params: Record<string, string>;
  /** Called after a screen signed the browser in (sign-in, invitation accepted). */
  onSignedIn(): Promise<void>;
}
