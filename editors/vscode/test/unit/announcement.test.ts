import { PROTOCOL_VERSION } from "@ctxlayer/client";
import { describe, expect, it } from "vitest";
import { checkAnnouncement, NEEDED_METHODS } from "../../src/announcement";
import { announcement } from "./fakeDaemon";

describe("the daemon's announcement", () => {
  it("of this protocol, complete, is taken as it is", () => {
    const sent = announcement();
    expect(checkAnnouncement(sent)).toEqual({ announcement: sent });
  });

  it("asks for every request of the protocol", () => {
    expect(NEEDED_METHODS).toContain("ctx/session/open");
    expect(NEEDED_METHODS).toContain("ctx/why");
    expect(NEEDED_METHODS).toContain("ctx/restore");
  });

  it("of another protocol says which, and to update ctxlayer", () => {
    const { problem } = checkAnnouncement(announcement({ protocolVersion: "0.0" }));
    expect(problem).toBe(
      `ctxlayer: this daemon speaks protocol 0.0; the extension needs protocol ${PROTOCOL_VERSION}: ` +
        "update ctxlayer (`pip install -U ctxlayer` where `ctxlayer.serverCommand` points).",
    );
  });

  it("missing (a daemon from before announcements) says so", () => {
    expect(checkAnnouncement(undefined).problem).toMatch(/^ctxlayer: this daemon speaks no protocol version; .*update ctxlayer/);
  });

  it("without a method or a field names what is missing", () => {
    const sent = announcement({ methods: NEEDED_METHODS.filter((m) => m !== "ctx/why") });
    delete (sent as any).modes;
    expect(checkAnnouncement(sent).problem).toMatch(
      /^ctxlayer: this daemon is older than protocol [\d.]+ as the extension knows it \(it lacks modes, ctx\/why\): update ctxlayer/,
    );
  });
});
