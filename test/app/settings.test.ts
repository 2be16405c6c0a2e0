import { describe, expect, it } from "vitest";
import { AppSettingsError, readAppSettings } from "../../src/app/settings.js";

const BASE = { WEBHOOK_SECRET: "s3cret", PROBEGATE_SIGNING_KEY: "app-test-signing-key-0123456789" };
const DAY_MS = 24 * 3600_000;

describe("PROBEGATE_DELIVERY_RETENTION_DAYS", () => {
  it("defaults to 7 days and takes whole or fractional days from 3 to 3650", () => {
    expect(readAppSettings(BASE, "/srv").deliveryRetentionMs).toBe(7 * DAY_MS);
    expect(readAppSettings({ ...BASE, PROBEGATE_DELIVERY_RETENTION_DAYS: "3" }, "/srv").deliveryRetentionMs).toBe(3 * DAY_MS);
    expect(readAppSettings({ ...BASE, PROBEGATE_DELIVERY_RETENTION_DAYS: "3.5" }, "/srv").deliveryRetentionMs).toBe(3.5 * DAY_MS);
    expect(readAppSettings({ ...BASE, PROBEGATE_DELIVERY_RETENTION_DAYS: "3650" }, "/srv").deliveryRetentionMs).toBe(3650 * DAY_MS);
  });

  it("refuses fewer than 3 days, naming the variable and GitHub's 3-day redelivery window", () => {
    const read = () => readAppSettings({ ...BASE, PROBEGATE_DELIVERY_RETENTION_DAYS: "2" }, "/srv");
    expect(read).toThrow(AppSettingsError);
    expect(read).toThrow(
      "  PROBEGATE_DELIVERY_RETENTION_DAYS must be at least 3 days: GitHub can redeliver a webhook for 3 days, and a delivery forgotten sooner would be acted on twice",
    );
  });

  it("refuses more than 3650 days and a value that is not a number", () => {
    expect(() => readAppSettings({ ...BASE, PROBEGATE_DELIVERY_RETENTION_DAYS: "3651" }, "/srv")).toThrow(/PROBEGATE_DELIVERY_RETENTION_DAYS must be at most 3650 days/);
    expect(() => readAppSettings({ ...BASE, PROBEGATE_DELIVERY_RETENTION_DAYS: "a week" }, "/srv")).toThrow(/PROBEGATE_DELIVERY_RETENTION_DAYS must be a number of days/);
  });
});

describe("key rotation and reconciliation settings", () => {
  it("reads previous signing keys (comma-separated) and the reconcile threshold, 10 minutes by default", () => {
    const s = readAppSettings({ ...BASE, PROBEGATE_PREVIOUS_SIGNING_KEYS: "old-key-one-0123456789, old-key-two-0123456789" }, "/srv");
    expect(s.previousSigningKeys).toEqual(["old-key-one-0123456789", "old-key-two-0123456789"]);
    expect(s.reconcileAfterMs).toBe(10 * 60_000);
    expect(readAppSettings({ ...BASE, PROBEGATE_RECONCILE_MINUTES: "3" }, "/srv").reconcileAfterMs).toBe(3 * 60_000);
    expect(readAppSettings(BASE, "/srv").previousSigningKeys).toEqual([]);
  });

  it("refuses a short previous key, naming the variable", () => {
    expect(() => readAppSettings({ ...BASE, PROBEGATE_PREVIOUS_SIGNING_KEYS: "short" }, "/srv")).toThrow(/PROBEGATE_PREVIOUS_SIGNING_KEYS must be a comma-separated list of keys of at least 16 characters/);
  });
});
