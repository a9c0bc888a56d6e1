/** Public entry of @ctxlayer/client: generated protocol types and the typed client. */
export * from "./protocol.generated";
export * from "./client";
