# ruff: noqa: E501  (product copy: one record per line reads better than wrapped strings)
"""Writes the demo catalog under data/demo/ (deterministic; rerun after editing).

    python -m spark_jobs.demo_catalog [--output-dir data/demo]

- products.jsonl: 24 hand-written products (ids 1-24) plus 320 generated ones (25-344).
- changes.jsonl: edits to existing products (newer ts) and four new products.
- deletes.txt: ids to delete.
- bad_products.jsonl: malformed rows for the quarantine demo (each fails for a reason).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from app.core.config import ROOT
from spark_jobs.generate_products import BASE_TS, generate

HERO_PRODUCTS: list[tuple[str, str, str, float, str]] = [
    # (name, brand, category, price, description)
    (
        "Tidewave Swim Pro Bone-Conduction Headphones",
        "Tidewave",
        "audio",
        129.0,
        "Open-ear headphones built for lap swimming, with 8 GB of onboard storage because Bluetooth cannot reach through water. IP68 rated to three metres, they stay put through tumble turns and under a swim cap. Expect about eight hours per charge.",
    ),
    (
        "Sonavia Drift ANC Wireless Earbuds",
        "Sonavia",
        "audio",
        89.99,
        "Compact noise-cancelling earbuds that quiet the train and the open-plan office. Seven hours of playback per charge and 28 with the case. Multipoint pairing hops between phone and laptop without menus.",
    ),
    (
        "Oakhollow Sound Studio 70 Closed-Back Headphones",
        "Oakhollow Sound",
        "audio",
        149.0,
        "Closed-back studio headphones with an honest, flat tuning for editing and mixing. Replaceable velour pads and a detachable cable keep them going for years.",
    ),
    (
        "Brumm Pebble Rugged Bluetooth Speaker",
        "Brumm",
        "audio",
        59.0,
        "A floating, sand-proof speaker that hangs from a backpack strap. Fifteen hours of battery life and a stereo mode when you own two. Good for the beach, the campsite and the shower.",
    ),
    (
        "Lumora Pageturn Warm-Light E-Reader",
        "Lumora",
        "electronics",
        139.0,
        "A glare-free 7-inch e-ink reader with adjustable warm light for bedtime reading. Waterproof to IPX8 and light enough to hold in one hand. A single charge lasts about six weeks.",
    ),
    (
        "Voltano Trek 20K Fast-Charge Power Bank",
        "Voltano",
        "electronics",
        49.0,
        "A 20,000 mAh power bank with 65 W USB-C output that charges most laptops. The small display shows the remaining charge in percent. Cabin-luggage friendly.",
    ),
    (
        "Northgate Pace GPS Running Watch",
        "Northgate",
        "electronics",
        249.0,
        "A dual-band GPS watch for runners and triathletes that lasts ten days in smartwatch mode. Tracks open-water swims, intervals and sleep. Contactless payments mean you can leave the wallet at home.",
    ),
    (
        "Casa Fiore Aria Semi-Automatic Espresso Machine",
        "Casa Fiore",
        "kitchen",
        349.0,
        "A compact espresso machine with PID temperature control and a 15-bar pump for consistent shots. The commercial-style steam wand textures milk for flat whites in under a minute. Heats up in 30 seconds.",
    ),
    (
        "Brewhaus Pour Gooseneck Kettle",
        "Brewhaus",
        "kitchen",
        79.0,
        "A variable-temperature gooseneck kettle for pour-over coffee and loose-leaf tea. Hold mode keeps water at temperature for an hour. The slim spout pours slowly and precisely.",
    ),
    (
        "Ironleaf Heritage 10-Inch Cast Iron Skillet",
        "Ironleaf",
        "kitchen",
        39.0,
        "Pre-seasoned cast iron that sears, roasts and bakes and will outlive its owner. Works on induction, in the oven and over a campfire. Two pouring lips and a helper handle.",
    ),
    (
        "Kitchell Santoku 7-Inch Damascus Knife",
        "Kitchell",
        "kitchen",
        119.0,
        "A 67-layer Damascus santoku hardened to 60 HRC for thin, precise slicing. The octagonal walnut handle sits comfortably in either hand. Hand wash only.",
    ),
    (
        "Stridewell Ridge GTX Trail Running Shoes",
        "Stridewell",
        "sports",
        149.0,
        "Trail running shoes with 5 mm lugs that grip wet rock and shed mud. A waterproof membrane and gusseted tongue keep feet dry and grit-free. A rock plate protects the forefoot on technical descents.",
    ),
    (
        "Kinetiq Tempo Carbon Road Racing Shoes",
        "Kinetiq",
        "sports",
        219.0,
        "A carbon-plated racing shoe with a bouncy foam midsole for 10K to marathon. The breathable mesh upper weighs almost nothing. Best saved for race day and fast sessions.",
    ),
    (
        "Ferro Athletics Grip Cork Yoga Mat",
        "Ferro Athletics",
        "sports",
        69.0,
        "A natural cork and rubber yoga mat that gets grippier as you sweat. Five millimetres of cushioning for knees and wrists. Comes with a cotton carry strap.",
    ),
    (
        "Alpenglow Cirrus 2 Backpacking Tent",
        "Alpenglow",
        "outdoor",
        329.0,
        "A two-person backpacking tent that weighs 1.3 kg and pitches in five minutes. Two doors and two porches keep gear dry and tent-mates happy. The fly has a 3,000 mm hydrostatic head.",
    ),
    (
        "Pinecrest Ember 400 Rechargeable Headlamp",
        "Pinecrest",
        "outdoor",
        39.0,
        "A 400-lumen headlamp with red-light mode that keeps your night vision. Charges over USB-C and tilts to light the trail or the map.",
    ),
    (
        "Fjellsted Vidde 45 L Trekking Backpack",
        "Fjellsted",
        "outdoor",
        179.0,
        "A ventilated 45-litre pack for hut-to-hut treks, with an adjustable back system and a hidden rain cover. Hip-belt pockets keep snacks and a phone within reach.",
    ),
    (
        "Hearthline Breeze HEPA Air Purifier",
        "Hearthline",
        "home",
        189.0,
        "A quiet true-HEPA purifier for bedrooms and living rooms up to 40 m². An air-quality sensor adjusts the fan automatically and night mode drops to 22 dB. Filters last about a year.",
    ),
    (
        "Mossgrove Merino Throw Blanket",
        "Mossgrove",
        "home",
        129.0,
        "A soft merino wool throw woven in Portugal, big enough for two on the sofa. Breathable and warm without overheating; machine washable on the wool cycle.",
    ),
    (
        "Dermaly Barrier Repair Moisturiser",
        "Dermaly",
        "beauty",
        24.0,
        "A fragrance-free moisturiser with ceramides and hyaluronic acid for dry, sensitive skin. Absorbs quickly and sits well under make-up. Dermatologically tested.",
    ),
    (
        "Brightbloc Harbour Town 520-Piece Building Set",
        "Brightbloc",
        "toys",
        49.0,
        "Build a harbour with a lighthouse, ferry and fish market from 520 pieces. Compatible with the major brick systems. For ages six and up.",
    ),
    (
        "Greenthumb Precision Bypass Pruning Shears",
        "Greenthumb",
        "garden",
        29.0,
        "Carbon-steel bypass secateurs for clean cuts on live stems up to 20 mm. The ergonomic grip and one-hand safety catch suit left and right hands.",
    ),
    (
        "Ergonia Flex Mesh Ergonomic Office Chair",
        "Ergonia",
        "office",
        399.0,
        "A breathable mesh office chair with adjustable lumbar support, seat depth and 4D armrests. The synchronised tilt moves with you through long working days. Five-year warranty.",
    ),
    (
        "Pawsome Cloud Orthopaedic Dog Bed",
        "Pawsome",
        "pet",
        89.0,
        "A memory-foam dog bed that eases pressure on older joints. The waterproof liner protects the foam and the cover goes in the washing machine. Non-slip base.",
    ),
]

CHANGES: list[dict[str, Any]] = [
    # Edits: a price cut, a rewritten description, a renamed product.
    {
        "id": 1,
        "ts": BASE_TS + 86_400_000,
        "name": "Tidewave Swim Pro Bone-Conduction Headphones",
        "brand": "Tidewave",
        "category": "audio",
        "price": 109.0,
        "description": "Open-ear headphones built for lap swimming, with 8 GB of onboard storage because Bluetooth cannot reach through water. IP68 rated to three metres, they stay put through tumble turns and under a swim cap. Expect about eight hours per charge.",
    },
    {
        "id": 8,
        "ts": BASE_TS + 86_400_000,
        "name": "Casa Fiore Aria Semi-Automatic Espresso Machine",
        "brand": "Casa Fiore",
        "category": "kitchen",
        "price": 349.0,
        "description": "A compact espresso machine with PID temperature control and a 15-bar pump for consistent shots. New for this season: a hot-water outlet for Americanos and tea. Heats up in 30 seconds.",
    },
    {
        "id": 12,
        "ts": BASE_TS + 86_400_000,
        "name": "Stridewell Ridge GTX 2 Trail Running Shoes",
        "brand": "Stridewell",
        "category": "sports",
        "price": 159.0,
        "description": "The second Ridge GTX keeps the 5 mm lugs and waterproof membrane and adds a wider toe box for long days. A rock plate protects the forefoot on technical descents.",
    },
    # New products.
    {
        "id": 1001,
        "ts": BASE_TS + 86_400_000,
        "name": "Tidewave Swim Lite Waterproof MP3 Earbuds",
        "brand": "Tidewave",
        "category": "audio",
        "price": 69.0,
        "description": "Budget waterproof earbuds with 4 GB of storage for swimmers who want music on every length. Three sizes of silicone tips seal out water. Six hours per charge.",
    },
    {
        "id": 1002,
        "ts": BASE_TS + 86_400_000,
        "name": "Casa Fiore Macina Burr Coffee Grinder",
        "brand": "Casa Fiore",
        "category": "kitchen",
        "price": 129.0,
        "description": "A conical burr grinder with 40 settings from espresso to French press. Low-speed grinding keeps beans cool and flavour intact.",
    },
    {
        "id": 1003,
        "ts": BASE_TS + 86_400_000,
        "name": "Waylight Carry 40 Travel Backpack",
        "brand": "Waylight",
        "category": "travel",
        "price": 149.0,
        "description": "A 40-litre carry-on backpack that opens like a suitcase. A padded laptop sleeve and lockable zips make airport security painless.",
    },
    {
        "id": 1004,
        "ts": BASE_TS + 86_400_000,
        "name": "Rootwell Cedar Raised Garden Bed",
        "brand": "Rootwell",
        "category": "garden",
        "price": 119.0,
        "description": "An untreated cedar raised bed, 120 by 60 cm, for vegetables and herbs. Assembles in fifteen minutes without tools.",
    },
]
DELETES = [3, 17, 30, 31]

BAD_ROWS: list[str] = [
    json.dumps({"id": "abc", "name": "Mystery Gadget", "price": 10}),
    json.dumps({"id": 2001, "name": "   ", "price": 12.5, "category": "home"}),
    json.dumps({"id": 2002, "name": "Negative Price Lamp", "price": -4.0}),
    json.dumps({"id": 2003.5, "name": "Half Id Mug", "price": 9.0}),
    json.dumps({"name": "No Id Teapot", "price": 19.0}),
    json.dumps({"id": 2004, "name": "Price Is Words Kettle", "price": "cheap"}),
    '{"id": 2005, "name": "Truncated line',
    json.dumps(
        {
            "id": 2006,
            "name": "Good Row\u0007 With Bell",
            "price": "15",
            "category": "kitchen",
            "description": "  Control characters are stripped; this row lands.  ",
        }
    ),
]


def hero_rows() -> list[dict[str, Any]]:
    return [
        {
            "id": n,
            "ts": BASE_TS,
            "name": name,
            "description": description,
            "category": category,
            "brand": brand,
            "price": price,
        }
        for n, (name, brand, category, price, description) in enumerate(HERO_PRODUCTS, start=1)
    ]


def write_demo(output_dir: Path) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    products = hero_rows() + list(generate(320, seed=2026, start_id=len(HERO_PRODUCTS) + 1))
    _write_jsonl(output_dir / "products.jsonl", products)
    _write_jsonl(output_dir / "changes.jsonl", CHANGES)
    (output_dir / "deletes.txt").write_text("".join(f"{i}\n" for i in DELETES))
    (output_dir / "bad_products.jsonl").write_text("".join(f"{line}\n" for line in BAD_ROWS))


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.demo_catalog", description=__doc__)
    parser.add_argument("--output-dir", default=str(ROOT / "data" / "demo"))
    args = parser.parse_args(argv)
    write_demo(Path(args.output_dir))
    print(f"wrote {args.output_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
