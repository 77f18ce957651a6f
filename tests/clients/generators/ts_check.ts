// The REST API through the client @hey-api/openapi-ts generates from /openapi.json, set up as the
// README says. Compiled with `tsc --strict`, then run on Node 22:
//   node ts_check.js --url http://127.0.0.1:PORT --credentials fixtures/demo-credentials.json
// Prints one PASS/FAIL line per check; exits 1 on any failure.
import { readFileSync } from "node:fs";
import { client } from "./generated/client.gen";
import {
  createDevice, getDevice, getQrCodeImage, listCompanies, listDevices,
  listPromotionQrCodes, listPromotions, updateDevice, uploadMedia, downloadMedia,
} from "./generated/sdk.gen";

function arg(name: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (v === undefined) throw new Error(`missing ${name}`);
  return v;
}

interface DemoKey { name: string; rawKey: string; client_id: string }
const demo = JSON.parse(readFileSync(arg("--credentials"), "utf8")) as { keys: DemoKey[] };
const key = demo.keys.find((k) => k.name === "northwind-admin");
if (key === undefined) throw new Error("no northwind-admin key");
const apiKey = key.rawKey;
const clientId = key.client_id;

// The README's set-up: answer only the two header schemes, so nothing else is sent.
client.setConfig({
  baseUrl: arg("--url"),
  auth: (scheme) =>
    scheme.name === "X-API-KEY" ? apiKey
    : scheme.name === "X-Service-Client-Id" ? clientId
    : undefined,
});

function assert(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(what);
}

const state: { company?: string; device?: string } = {};
let failures = 0;

async function check(name: string, fn: () => Promise<string>): Promise<void> {
  try {
    console.log(`PASS ts-client ${name}: ${await fn()}`);
  } catch (e) {
    failures += 1;
    console.log(`FAIL ts-client ${name}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

const ONE_PIXEL_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
  "base64",
);

async function main(): Promise<void> {
  await check("list companies", async () => {
    const { data, error } = await listCompanies();
    assert(data !== undefined, JSON.stringify(error));
    const first = data.data[0];
    assert(first !== undefined, "no company");
    state.company = first.id;
    return `${data.data.length} companies, first ${first.name}`;
  });

  await check("walk device pages", async () => {
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (;;) {
      const { data, error } = await listDevices({ query: { limit: 4, cursor } });
      assert(data !== undefined, JSON.stringify(error));
      data.data.forEach((d) => seen.add(d.id));
      if (!data.has_more || data.next_cursor === null) break;
      cursor = data.next_cursor;
    }
    assert(seen.size > 4, `${seen.size} devices`);
    return `${seen.size} devices`;
  });

  await check("create a device", async () => {
    assert(state.company !== undefined, "no company");
    const { data, error, response } = await createDevice({
      body: { company_id: state.company, name: "TS client screen", platform: "linux" },
    });
    assert(data !== undefined && response?.status === 201, JSON.stringify(error));
    state.device = data.id;
    return data.id;
  });

  await check("ETag and If-Match", async () => {
    assert(state.device !== undefined, "no device");
    const got = await getDevice({ path: { id: state.device } });
    const etag = got.response?.headers.get("etag") ?? null;
    assert(etag !== null, "no ETag");
    const ok = await updateDevice({ path: { id: state.device }, body: { name: "Renamed" }, headers: { "If-Match": etag } });
    assert(ok.response?.status === 200, `update: ${ok.response?.status}`);
    const stale = await updateDevice({ path: { id: state.device }, body: { name: "Again" }, headers: { "If-Match": etag } });
    assert(stale.response?.status === 412 && stale.error !== undefined, `stale: ${stale.response?.status}`);
    return `${etag} accepted once, then 412 ${stale.error.type}`;
  });

  await check("upload and download media", async () => {
    assert(state.company !== undefined, "no company");
    const { data, error } = await uploadMedia({
      body: new Blob([ONE_PIXEL_PNG], { type: "image/png" }),
      query: { company_id: state.company, filename: "ts.png" },
    });
    assert(data !== undefined, JSON.stringify(error));
    const got = await downloadMedia({ path: { id: data.id }, parseAs: "arrayBuffer" });
    assert(got.data instanceof ArrayBuffer, `download: ${got.response?.status}`);
    assert(Buffer.from(got.data).equals(ONE_PIXEL_PNG), "bytes differ");
    return `${data.id}, downloaded byte for byte`;
  });

  await check("QR image", async () => {
    const promos = await listPromotions();
    assert(promos.data !== undefined, "no promotions");
    for (const p of promos.data.data) {
      const codes = await listPromotionQrCodes({ path: { id: p.id } });
      const code = codes.data?.data[0];
      if (code === undefined) continue;
      const img = await getQrCodeImage({ path: { id: code.id }, query: { format: "png" }, parseAs: "arrayBuffer" });
      assert(img.data instanceof ArrayBuffer, `image: ${img.response?.status}`);
      assert(Buffer.from(img.data).subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])), "not a PNG");
      return `PNG of ${code.id}`;
    }
    throw new Error("no QR code");
  });

  await check("404 as a typed problem", async () => {
    const { error, response } = await getDevice({ path: { id: "dev_doesnotexist" } });
    assert(response?.status === 404 && error !== undefined, `${response?.status}`);
    return `${error.status} ${error.type}: ${error.detail}`;
  });
}

void main().then(() => process.exit(failures === 0 ? 0 : 1));
