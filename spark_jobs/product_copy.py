# ruff: noqa: E501  (a phrase book: one sentence per line reads better than wrapped strings)
"""The phrase book behind generated products: per category, brands and product kinds with
openings, feature sentences and a price band. Written for this project (brands invented).

Generated descriptions take one opening, one or two features and sometimes a closing line,
so two products of the same kind rarely read alike.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Kind:
    noun: str
    qualifiers: tuple[str, ...]
    openings: tuple[str, ...]
    features: tuple[str, ...]
    price: tuple[float, float]


@dataclass(frozen=True, slots=True)
class CategorySpec:
    brands: tuple[str, ...]
    kinds: tuple[Kind, ...]
    closings: tuple[str, ...]
    # Colour lines make no sense for every shelf (a cookbook in "sage green").
    colours: bool = True


SERIES = (
    "Aero",
    "Terra",
    "Nova",
    "Pulse",
    "Drift",
    "Summit",
    "Halo",
    "Vista",
    "Ember",
    "Tide",
    "Arc",
    "Echo",
    "Nimbus",
    "Quill",
    "Juniper",
    "Flint",
    "Orbit",
    "Cedar",
    "Lumen",
    "Sable",
)
COLOURS = (
    "graphite",
    "sage green",
    "sand",
    "midnight blue",
    "coral",
    "chalk white",
    "slate",
    "terracotta",
    "forest green",
    "charcoal",
    "ocean blue",
    "mustard",
    "stone grey",
    "plum",
)
FINISH_TEMPLATES = (
    "The {series} comes in {c1} or {c2}.",
    "Choose {c1}, {c2} or classic black.",
    "This edition is finished in {c1} with {c2} accents.",
    "Available in {c1}; a {c2} version follows later this season.",
)
MODELS = ("", "", "", " 2", " 3", " X", " Pro", " Mini", " Plus", " 200", " 500", " S")

CATALOG: dict[str, CategorySpec] = {
    "audio": CategorySpec(
        brands=("Sonavia", "Tidewave", "Keylight Audio", "Brumm", "Oakhollow Sound"),
        closings=(
            "A charging case and three sizes of ear tips come in the box.",
            "Covered by a two-year warranty.",
            "Pairs with phones, tablets and laptops over Bluetooth 5.3.",
        ),
        kinds=(
            Kind(
                "Swimming Headphones",
                ("Waterproof", "Bone-Conduction", "Open-Ear", "IP68"),
                (
                    "Made for lap swimmers, these headphones keep playing at depths of up to three metres.",
                    "Bone-conduction drivers sit in front of the ears, so music reaches you even under a swim cap.",
                    "These open-ear headphones survive the pool, the sea and a rinse under the tap.",
                ),
                (
                    "8 GB of onboard storage holds about 2,000 songs, because Bluetooth does not travel through water.",
                    "The titanium band weighs 29 g and stays put during tumble turns.",
                    "A full charge lasts around eight hours and a ten-minute top-up gives another hour.",
                    "Physical buttons work with wet fingers, unlike touch controls.",
                    "Leaving the ears open keeps you aware of traffic on outdoor runs too.",
                ),
                (59.0, 179.0),
            ),
            Kind(
                "Wireless Earbuds",
                ("Noise-Cancelling", "Sport", "Compact", "Hybrid ANC"),
                (
                    "These earbuds block out the commute without blocking out the announcements.",
                    "Small, light earbuds with a surprisingly full, warm sound.",
                    "True wireless earbuds tuned for podcasts and calls as much as for music.",
                ),
                (
                    "Active noise cancelling cuts low engine hum on trains and planes.",
                    "Six microphones keep your voice clear on calls in windy streets.",
                    "Battery life is seven hours per charge, 28 hours with the case.",
                    "Wing tips lock the buds in place for running and gym sessions.",
                    "Multipoint pairing switches between laptop and phone automatically.",
                ),
                (29.0, 249.0),
            ),
            Kind(
                "Over-Ear Headphones",
                ("Studio", "Wireless", "Closed-Back", "Foldable"),
                (
                    "Plush over-ear headphones for long listening sessions at the desk or on a flight.",
                    "Closed-back headphones that keep your music in and the office noise out.",
                    "A reference-tuned pair for mixing, editing and honest listening.",
                ),
                (
                    "Memory-foam cushions and a light headband stay comfortable for hours.",
                    "40 mm drivers deliver tight bass without muddying vocals.",
                    "Up to 40 hours of playback, or plug in the included cable when the battery runs out.",
                    "The ear cups fold flat into a hard travel case.",
                ),
                (49.0, 399.0),
            ),
            Kind(
                "Bluetooth Speaker",
                ("Portable", "Rugged", "Shower", "Outdoor"),
                (
                    "A palm-sized speaker with enough volume for a picnic or a campsite.",
                    "This rugged speaker floats, shrugs off sand and keeps playing after a drop.",
                    "Room-filling sound from a speaker that fits in a jacket pocket.",
                ),
                (
                    "IP67 dust and water resistance means it can sit on the edge of the pool.",
                    "Pair two units for stereo sound.",
                    "Runs for 15 hours at moderate volume.",
                    "A built-in strap hooks onto backpacks and handlebars.",
                ),
                (25.0, 199.0),
            ),
        ),
    ),
    "electronics": CategorySpec(
        brands=("Voltano", "Pixelry", "Northgate", "Quanta Home", "Lumora"),
        closings=(
            "Includes a USB-C cable; the wall adapter is sold separately.",
            "Backed by a one-year limited warranty.",
            "Firmware updates arrive over the companion app.",
        ),
        kinds=(
            Kind(
                "Power Bank",
                ("20,000 mAh", "Slim", "Fast-Charge", "MagSafe-Compatible"),
                (
                    "A power bank that charges a phone four times over and still fits in a bag pocket.",
                    "Keep a laptop, phone and earbuds alive through a long travel day.",
                ),
                (
                    "65 W USB-C output is enough to charge most laptops.",
                    "A small display shows the remaining charge in percent.",
                    "Airline-friendly capacity, so it can go in cabin luggage.",
                    "Charges two devices at once without slowing down.",
                ),
                (19.0, 89.0),
            ),
            Kind(
                "Smartwatch",
                ("GPS", "Fitness", "AMOLED", "Titanium"),
                (
                    "A smartwatch that tracks runs, rides and swims and lasts a week between charges.",
                    "Notifications, heart rate and sleep tracking in a watch that still looks like a watch.",
                ),
                (
                    "Dual-band GPS keeps track lines accurate between tall buildings.",
                    "Water resistant to 50 metres, with pool lap counting.",
                    "The always-on display stays readable in direct sunlight.",
                    "Contactless payments leave the wallet at home on a run.",
                ),
                (99.0, 449.0),
            ),
            Kind(
                "E-Reader",
                ("Glare-Free", "Waterproof", "Warm-Light", "Compact"),
                (
                    "A paper-like screen that reads like print in bright sun and at bedtime.",
                    "Thousands of books in a device lighter than a paperback.",
                ),
                (
                    "Adjustable warm light is easy on the eyes late at night.",
                    "Weeks of battery life on a single charge.",
                    "IPX8 waterproofing means reading in the bath is no risk.",
                    "Supports EPUB, PDF and audiobooks over Bluetooth.",
                ),
                (89.0, 249.0),
            ),
            Kind(
                "Webcam",
                ("4K", "Full HD", "Auto-Framing", "Low-Light"),
                (
                    "A webcam that makes video calls look like you invested in a studio.",
                    "Clip-on camera with sharp image and clear sound for remote work.",
                ),
                (
                    "Auto-framing keeps you centred when you lean back.",
                    "Dual microphones filter keyboard noise.",
                    "A privacy shutter slides over the lens when the call ends.",
                    "Low-light correction brightens dim home offices.",
                ),
                (39.0, 199.0),
            ),
        ),
    ),
    "kitchen": CategorySpec(
        brands=("Casa Fiore", "Brewhaus", "Ironleaf", "Kitchell", "Marrow & Salt"),
        closings=(
            "Dishwasher-safe parts make clean-up quick.",
            "Comes with a recipe booklet to get started.",
            "Spare parts are available for ten years.",
        ),
        kinds=(
            Kind(
                "Espresso Machine",
                ("Semi-Automatic", "Compact", "Dual-Boiler", "Manual Lever"),
                (
                    "A compact espresso machine that pulls café-quality shots on a kitchen counter.",
                    "Make espresso, flat whites and lattes at home without a barista course.",
                    "An espresso machine for people who want control over grind, dose and shot time.",
                ),
                (
                    "A 15-bar pump and PID temperature control give consistent extraction.",
                    "The steam wand textures milk for latte art in under a minute.",
                    "It heats up in about 30 seconds thanks to a thermoblock heater.",
                    "A removable 1.8 litre water tank refills at the tap.",
                ),
                (149.0, 899.0),
            ),
            Kind(
                "Chef's Knife",
                ("8-Inch", "Damascus Steel", "Japanese", "Forged"),
                (
                    "A balanced chef's knife for everything from onions to a Sunday roast.",
                    "This hand-finished knife holds a razor edge through weeks of daily cooking.",
                ),
                (
                    "The blade is forged from high-carbon stainless steel and hardened to 60 HRC.",
                    "A full tang and riveted handle give a confident, balanced grip.",
                    "Hand wash and dry to keep the edge keen.",
                ),
                (35.0, 189.0),
            ),
            Kind(
                "Cast Iron Skillet",
                ("Pre-Seasoned", "10-Inch", "Enamelled", "Deep"),
                (
                    "A skillet that goes from hob to oven to table and lasts for generations.",
                    "Heavy cast iron sears steak and bakes cornbread equally well.",
                ),
                (
                    "It arrives pre-seasoned with vegetable oil and improves with every use.",
                    "Works on gas, electric, induction and over a campfire.",
                    "Two pouring lips and a helper handle make it easy to move when full.",
                ),
                (24.0, 119.0),
            ),
            Kind(
                "Electric Kettle",
                ("Gooseneck", "Variable-Temperature", "Glass", "Cordless"),
                (
                    "A kettle that brings water to exactly the temperature your tea or pour-over wants.",
                    "A quiet, quick kettle for a kitchen that drinks a lot of tea.",
                ),
                (
                    "Presets for green tea, oolong and coffee take the guesswork out.",
                    "A hold function keeps water hot for up to an hour.",
                    "The gooseneck spout pours slowly and precisely.",
                    "Boil-dry protection switches it off when the kettle is empty.",
                ),
                (29.0, 149.0),
            ),
            Kind(
                "Stand Mixer",
                ("Tilt-Head", "5-Quart", "Professional", "Compact"),
                (
                    "A stand mixer that kneads bread dough while you get on with the rest of dinner.",
                    "From meringues to brioche, this mixer does the tiring part of baking.",
                ),
                (
                    "A 1,000 W motor handles stiff dough without straining.",
                    "Comes with a whisk, dough hook and flat beater.",
                    "Ten speeds plus a pulse setting.",
                ),
                (129.0, 549.0),
            ),
        ),
    ),
    "home": CategorySpec(
        brands=("Hearthline", "Mossgrove", "Lindqvist Home", "Calma", "Wrenfield"),
        closings=(
            "Ships flat-packed with all tools included.",
            "Free returns within 30 days.",
            "Made with FSC-certified materials.",
        ),
        kinds=(
            Kind(
                "Air Purifier",
                ("HEPA", "Quiet", "Smart", "Large-Room"),
                (
                    "An air purifier that clears pollen, dust and pet dander from rooms up to 40 m².",
                    "Sleep better with cleaner air from a purifier quieter than a whisper.",
                ),
                (
                    "A true HEPA filter captures 99.97% of particles down to 0.3 microns.",
                    "An air-quality sensor adjusts the fan speed automatically.",
                    "Night mode dims the lights and drops the noise to 22 dB.",
                    "Replacement filters last around twelve months.",
                ),
                (79.0, 349.0),
            ),
            Kind(
                "Throw Blanket",
                ("Chunky Knit", "Merino Wool", "Linen", "Weighted"),
                (
                    "A soft throw for the sofa that looks good folded and feels better unfolded.",
                    "Wrap up on cold evenings in a blanket woven to last.",
                ),
                (
                    "Machine washable on a gentle wool cycle.",
                    "Measures 130 by 170 cm, big enough for two.",
                    "Breathable natural fibres keep you warm without overheating.",
                ),
                (39.0, 169.0),
            ),
            Kind(
                "Table Lamp",
                ("Ceramic", "Dimmable", "Rechargeable", "Mid-Century"),
                (
                    "A warm, dimmable lamp that turns a corner into a reading nook.",
                    "A cordless lamp you can carry from the dining table to the balcony.",
                ),
                (
                    "Touch dimming has three brightness levels.",
                    "A linen shade diffuses the light softly.",
                    "The rechargeable battery lasts a full evening on the lowest setting.",
                ),
                (29.0, 189.0),
            ),
            Kind(
                "Robot Vacuum",
                ("Self-Emptying", "Mapping", "Slim", "Mop-Combo"),
                (
                    "A robot vacuum that cleans while you are out and empties itself afterwards.",
                    "Let this slim robot handle the crumbs and pet hair under the sofa.",
                ),
                (
                    "Lidar mapping plans tidy, efficient cleaning lines room by room.",
                    "Strong suction lifts hair from carpets without tangling the brush.",
                    "Set no-go zones around cables and pet bowls in the app.",
                ),
                (149.0, 699.0),
            ),
        ),
    ),
    "sports": CategorySpec(
        brands=("Stridewell", "Kinetiq", "Rallyline", "Ferro Athletics", "Vantage Sport"),
        closings=(
            "Available in several colourways.",
            "Tested by club athletes before release.",
            "Exchange for a different size free of charge.",
        ),
        kinds=(
            Kind(
                "Trail Running Shoes",
                ("Grippy", "Cushioned", "Waterproof", "Lightweight"),
                (
                    "Trail shoes that grip wet rock and loose gravel without feeling heavy.",
                    "Built for long days on muddy singletrack and rocky descents.",
                    "A cushioned trail shoe for ultra distances and everyday off-road miles.",
                ),
                (
                    "5 mm lugs bite into mud and shed it again on firmer ground.",
                    "A rock plate protects the forefoot from sharp stones.",
                    "The waterproof membrane keeps feet dry through puddles and dewy grass.",
                    "A 6 mm drop suits both heel and midfoot strikers.",
                    "The gusseted tongue keeps grit out.",
                ),
                (79.0, 189.0),
            ),
            Kind(
                "Road Running Shoes",
                ("Carbon-Plated", "Daily Trainer", "Stability", "Racing"),
                (
                    "A responsive road shoe for tempo runs and race day.",
                    "A comfortable daily trainer that makes easy miles feel easier.",
                ),
                (
                    "A foam midsole returns energy with every stride.",
                    "The engineered mesh upper breathes on hot summer runs.",
                    "Reflective details make you visible at dusk.",
                ),
                (89.0, 259.0),
            ),
            Kind(
                "Tennis Racket",
                ("Graphite", "Junior", "Control", "Power"),
                (
                    "A forgiving racket that adds depth to groundstrokes for club players.",
                    "A control-oriented frame for players who hit flat and hard.",
                ),
                (
                    "The 100 square inch head has a generous sweet spot.",
                    "Comes strung at 24 kg with a protective cover.",
                    "Weighs 285 g unstrung for quick swings at the net.",
                ),
                (49.0, 249.0),
            ),
            Kind(
                "Yoga Mat",
                ("Non-Slip", "Extra-Thick", "Cork", "Travel"),
                (
                    "A grippy mat that stays put through sweaty vinyasa flows.",
                    "Cushioned support for knees and wrists in every pose.",
                ),
                (
                    "Natural rubber base grips the floor on wood and tile.",
                    "Alignment lines help with hand and foot placement.",
                    "Rolls up small and comes with a carry strap.",
                ),
                (19.0, 119.0),
            ),
        ),
    ),
    "outdoor": CategorySpec(
        brands=("Ridgeback Gear", "Pinecrest", "Alpenglow", "Fjellsted", "Cairn & Co"),
        closings=(
            "Repairable, with spare parts sold separately.",
            "Packs into its own stuff sack.",
            "Lifetime guarantee against manufacturing defects.",
        ),
        kinds=(
            Kind(
                "Hiking Backpack",
                ("30 L", "45 L", "Ventilated", "Ultralight"),
                (
                    "A day-to-weekend pack that carries comfortably when fully loaded.",
                    "A ventilated backpack that keeps your back cool on steep summer climbs.",
                ),
                (
                    "An adjustable back system fits torsos from 40 to 52 cm.",
                    "Hip-belt pockets keep snacks and a phone within reach.",
                    "An integrated rain cover tucks into the base.",
                    "Hydration-sleeve compatible for up to a 3-litre bladder.",
                ),
                (59.0, 229.0),
            ),
            Kind(
                "Camping Tent",
                ("2-Person", "4-Person", "Backpacking", "Four-Season"),
                (
                    "A tent that pitches in five minutes and stands firm in a stiff breeze.",
                    "A roomy shelter for family weekends at the campsite.",
                ),
                (
                    "The flysheet has a 3,000 mm hydrostatic head for heavy rain.",
                    "Two doors and two porches mean nobody climbs over anybody at night.",
                    "Colour-coded poles make pitching in the dark straightforward.",
                ),
                (89.0, 599.0),
            ),
            Kind(
                "Sleeping Bag",
                ("Down", "Synthetic", "3-Season", "Mummy"),
                (
                    "A warm, packable sleeping bag for cold nights under canvas.",
                    "A three-season bag that keeps you warm down to freezing.",
                ),
                (
                    "Comfort-rated to 2 °C and limit-rated to -4 °C.",
                    "Responsibly sourced 700-fill down compresses to the size of a loaf.",
                    "A draught collar stops warm air escaping at the shoulders.",
                ),
                (59.0, 349.0),
            ),
            Kind(
                "Headlamp",
                ("Rechargeable", "400-Lumen", "Red-Light", "Waterproof"),
                (
                    "A bright, light headlamp for early starts and late finishes.",
                    "Hands-free light for camp chores, night runs and power cuts.",
                ),
                (
                    "Red-light mode preserves night vision and does not wake tent-mates.",
                    "Charges over USB-C and shows the battery level.",
                    "Tilts 90 degrees to light the trail or the map.",
                ),
                (19.0, 89.0),
            ),
        ),
    ),
    "fitness": CategorySpec(
        brands=("IronPeak", "Corefit", "Motiva", "Barbelle"),
        closings=(
            "Exercise guide included.",
            "Ships in recyclable packaging.",
        ),
        kinds=(
            Kind(
                "Adjustable Dumbbells",
                ("Quick-Select", "24 kg", "Compact", "Pair of"),
                (
                    "A whole rack of dumbbells in the footprint of one pair.",
                    "Adjustable dumbbells for home workouts when space is tight.",
                ),
                (
                    "Turn the dial to change from 2.5 to 24 kg in seconds.",
                    "A moulded tray keeps the plates tidy between sets.",
                    "Rubber-coated plates protect floors and keep noise down.",
                ),
                (99.0, 399.0),
            ),
            Kind(
                "Resistance Bands",
                ("Set of 5", "Fabric", "Loop", "Heavy"),
                (
                    "Portable resistance bands for strength, mobility and physio routines.",
                    "Train anywhere with a set of bands that fits in a small pouch.",
                ),
                (
                    "Five colour-coded resistance levels from light to extra heavy.",
                    "Fabric bands do not roll up or pinch during squats.",
                    "A door anchor turns them into a cable machine.",
                ),
                (12.0, 49.0),
            ),
            Kind(
                "Rowing Machine",
                ("Magnetic", "Water", "Foldable", "Air"),
                (
                    "A full-body workout that is gentle on the joints.",
                    "A rowing machine smooth and quiet enough for an apartment.",
                ),
                (
                    "Sixteen resistance levels cover warm-ups to intervals.",
                    "The monitor shows split time, stroke rate and calories.",
                    "It folds upright and rolls away on wheels.",
                ),
                (249.0, 1199.0),
            ),
        ),
    ),
    "beauty": CategorySpec(
        brands=("Lune & Leaf", "Dermaly", "Solstice Skin", "Petalworks", "Aurea"),
        closings=(
            "Dermatologically tested and cruelty-free.",
            "Packaged in recyclable glass.",
            "Free from added fragrance.",
        ),
        kinds=(
            Kind(
                "Face Moisturiser",
                ("Hydrating", "SPF 30", "Oil-Free", "Overnight"),
                (
                    "A lightweight moisturiser that sinks in fast and sits well under make-up.",
                    "Daily hydration for dry and sensitive skin.",
                ),
                (
                    "Hyaluronic acid and ceramides strengthen the skin barrier.",
                    "Broad-spectrum SPF 30 protects on city days.",
                    "A 50 ml tube lasts about two months of twice-daily use.",
                ),
                (12.0, 69.0),
            ),
            Kind(
                "Hair Dryer",
                ("Ionic", "Travel", "Diffuser", "Fast-Drying"),
                (
                    "A fast, quiet hair dryer that leaves hair smooth instead of frizzy.",
                    "A folding dryer powerful enough for thick hair and small enough for a weekend bag.",
                ),
                (
                    "Ionic technology reduces static and frizz.",
                    "Three heat settings plus a cool shot to set styles.",
                    "Includes a concentrator nozzle and a diffuser for curls.",
                ),
                (29.0, 299.0),
            ),
            Kind(
                "Electric Toothbrush",
                ("Sonic", "Rechargeable", "Travel", "Pressure-Sensing"),
                (
                    "A sonic toothbrush that makes two minutes of brushing feel thorough.",
                    "Dentist-level clean at home with gentle sonic vibrations.",
                ),
                (
                    "A pressure sensor warns when you brush too hard.",
                    "One charge lasts three weeks, handy for trips.",
                    "A quadrant timer nudges you to move on every 30 seconds.",
                ),
                (29.0, 179.0),
            ),
        ),
    ),
    "toys": CategorySpec(
        brands=("Tumbletown", "Brightbloc", "Wobbly Fox", "Kitekid"),
        closings=(
            "Meets EN71 toy safety standards.",
            "Recommended for ages 4 and up.",
            "Batteries included.",
        ),
        colours=False,
        kinds=(
            Kind(
                "Building Blocks Set",
                ("500-Piece", "Magnetic", "Wooden", "Starter"),
                (
                    "An open-ended building set that grows from towers to whole cities.",
                    "Colourful blocks that encourage hours of creative play.",
                ),
                (
                    "Compatible with the major brick systems.",
                    "A sturdy storage tub doubles as a building base.",
                    "Idea cards suggest twenty models to start with.",
                ),
                (19.0, 89.0),
            ),
            Kind(
                "Remote Control Car",
                ("Off-Road", "Waterproof", "Stunt", "4WD"),
                (
                    "A tough RC car that climbs kerbs, splashes through puddles and keeps going.",
                    "A fast, grippy remote control car for garden racing.",
                ),
                (
                    "Reaches 25 km/h and has a 60-metre range.",
                    "Two rechargeable batteries give about 40 minutes of driving.",
                    "Oil-filled shocks soak up bumps and jumps.",
                ),
                (29.0, 149.0),
            ),
            Kind(
                "Board Game",
                ("Family", "Cooperative", "Strategy", "Party"),
                (
                    "A board game the whole family can learn in ten minutes and play all evening.",
                    "A cooperative game where everyone wins or loses together.",
                ),
                (
                    "For two to six players aged eight and up.",
                    "A game takes about 45 minutes.",
                    "Illustrated cards and wooden pieces make it a pleasure to set up.",
                ),
                (19.0, 69.0),
            ),
        ),
    ),
    "books": CategorySpec(
        brands=("Harrow Press", "Blue Lantern Books", "Quayside Publishing", "Marginalia"),
        closings=(
            "Hardback with a ribbon marker.",
            "Also available as an e-book.",
            "Printed on responsibly sourced paper.",
        ),
        colours=False,
        kinds=(
            Kind(
                "Cookbook",
                ("Vegetarian", "Weeknight", "Baking", "One-Pot"),
                (
                    "Over a hundred recipes for cooking well on busy weeknights.",
                    "A warm, practical cookbook built around seasonal vegetables.",
                ),
                (
                    "Every recipe has a photograph and takes under 45 minutes.",
                    "Includes meal plans and a shopping list for each week.",
                    "Clear notes on swaps for vegan and gluten-free diets.",
                ),
                (14.0, 39.0),
            ),
            Kind(
                "Field Guide",
                ("Birds of Europe", "Wild Flowers", "Mushroom", "Night Sky"),
                (
                    "A pocket field guide that helps you name what you see on a walk.",
                    "A clear, well-illustrated guide for beginners and keen naturalists alike.",
                ),
                (
                    "More than 600 colour illustrations with distribution maps.",
                    "A water-resistant cover survives a rainy day out.",
                    "Quick-reference tabs make identification fast in the field.",
                ),
                (12.0, 34.0),
            ),
            Kind(
                "Novel",
                ("Mystery", "Historical", "Science Fiction", "Literary"),
                (
                    "A gripping novel that keeps you reading well past midnight.",
                    "A richly imagined story about family, secrets and a small coastal town.",
                ),
                (
                    "Shortlisted for a national fiction prize.",
                    "The first book in a trilogy.",
                    "Includes a reading-group guide.",
                ),
                (8.0, 24.0),
            ),
        ),
    ),
    "garden": CategorySpec(
        brands=("Greenthumb", "Rootwell", "Hedgerow Tools", "Bloomfield"),
        closings=(
            "Ten-year guarantee on the steel parts.",
            "Hang it up in the shed with the built-in loop.",
        ),
        kinds=(
            Kind(
                "Pruning Shears",
                ("Bypass", "Ratchet", "Ergonomic", "Heavy-Duty"),
                (
                    "Sharp, comfortable secateurs for roses, shrubs and fruit trees.",
                    "Clean cuts on live stems up to 20 mm thick.",
                ),
                (
                    "Hardened carbon-steel blades stay sharp all season.",
                    "A ratchet mechanism makes thick branches easy on the hands.",
                    "A safety catch works with either hand.",
                ),
                (14.0, 59.0),
            ),
            Kind(
                "Raised Garden Bed",
                ("Cedar", "Galvanised Steel", "Modular", "Elevated"),
                (
                    "Grow vegetables at a comfortable height with a raised bed that lasts.",
                    "A raised bed for herbs and salad on a patio or balcony.",
                ),
                (
                    "Untreated cedar resists rot naturally.",
                    "Assembles in fifteen minutes without tools.",
                    "Drainage holes stop roots from sitting in water.",
                ),
                (49.0, 249.0),
            ),
            Kind(
                "Garden Hose",
                ("Expandable", "30 m", "Kink-Free", "Hybrid"),
                (
                    "A hose that does not kink, tangle or fight back on the reel.",
                    "A lightweight hose that reaches the far end of the garden.",
                ),
                (
                    "Comes with a seven-pattern spray nozzle.",
                    "Brass fittings do not crack in frost.",
                    "UV-resistant outer layer for years in the sun.",
                ),
                (19.0, 89.0),
            ),
        ),
    ),
    "office": CategorySpec(
        brands=("Deskwise", "Inkwell & Oak", "Ergonia", "Papertrail"),
        closings=(
            "Five-year warranty.",
            "Ships assembled.",
            "Spare parts and refills are easy to find.",
        ),
        kinds=(
            Kind(
                "Ergonomic Office Chair",
                ("Mesh", "High-Back", "Adjustable", "Saddle"),
                (
                    "An office chair that supports your back through long working days.",
                    "A breathable mesh chair for a home office that gets real use.",
                ),
                (
                    "Adjustable lumbar support, seat depth and 4D armrests.",
                    "A synchronised tilt mechanism moves with you.",
                    "Rated for users up to 130 kg.",
                ),
                (149.0, 749.0),
            ),
            Kind(
                "Standing Desk",
                ("Electric", "Dual-Motor", "Compact", "Bamboo-Top"),
                (
                    "Switch between sitting and standing at the touch of a button.",
                    "A sturdy height-adjustable desk that does not wobble at full height.",
                ),
                (
                    "Four memory presets remember your favourite heights.",
                    "Anti-collision sensing stops the desk if it meets an obstacle.",
                    "Height range 62 to 127 cm suits most people.",
                ),
                (249.0, 899.0),
            ),
            Kind(
                "Fountain Pen",
                ("Fine Nib", "Brass", "Demonstrator", "Pocket"),
                (
                    "A fountain pen that makes note-taking a small daily pleasure.",
                    "A smooth-writing pen with enough heft to feel substantial.",
                ),
                (
                    "Steel nib with an iridium tip, available in fine and medium.",
                    "Takes standard international cartridges or a converter.",
                    "Arrives in a gift box with six ink cartridges.",
                ),
                (19.0, 149.0),
            ),
            Kind(
                "Notebook",
                ("A5 Dotted", "Hardcover", "Recycled", "Lay-Flat"),
                (
                    "A notebook with paper that takes fountain-pen ink without bleeding.",
                    "A sturdy notebook for bullet journals, sketches and meeting notes.",
                ),
                (
                    "192 numbered pages of 100 gsm paper.",
                    "A lay-flat binding opens fully on the desk.",
                    "Two ribbon markers and a back pocket.",
                ),
                (8.0, 29.0),
            ),
        ),
    ),
    "pet": CategorySpec(
        brands=("Pawsome", "Tailwind Pet", "Furhaven Co", "Barkley & Bean"),
        closings=(
            "Vet-approved design.",
            "Machine-washable cover.",
            "Sized for small, medium and large breeds.",
        ),
        kinds=(
            Kind(
                "Dog Bed",
                ("Orthopaedic", "Calming", "Waterproof", "Bolster"),
                (
                    "A supportive bed that helps older dogs rest and get up easily.",
                    "A round, raised-rim bed that anxious dogs love to curl up in.",
                ),
                (
                    "Memory foam relieves pressure on joints and hips.",
                    "A non-slip base keeps the bed in place on wooden floors.",
                    "The waterproof liner protects the foam from accidents.",
                ),
                (29.0, 159.0),
            ),
            Kind(
                "Cat Tree",
                ("Multi-Level", "Compact", "Sisal", "Wall-Mounted"),
                (
                    "A scratching post and lookout tower in one.",
                    "Give indoor cats somewhere to climb, scratch and nap.",
                ),
                (
                    "Sisal-wrapped posts save the sofa from claws.",
                    "A hidden cubby offers a quiet place to hide.",
                    "A wide base keeps it steady when cats leap on.",
                ),
                (39.0, 189.0),
            ),
            Kind(
                "Dog Harness",
                ("No-Pull", "Reflective", "Padded", "Adventure"),
                (
                    "A comfortable harness that discourages pulling without pressure on the throat.",
                    "A padded harness built for hikes, runs and long walks.",
                ),
                (
                    "Front and back lead attachment points.",
                    "Reflective trim keeps dogs visible at night.",
                    "Four adjustment points for a snug fit.",
                ),
                (19.0, 69.0),
            ),
        ),
    ),
    "travel": CategorySpec(
        brands=("Waylight", "Globetrot", "Harbour & Hill", "Transit Co"),
        closings=(
            "Fits most airlines' cabin size limits.",
            "Ten-year warranty against breakage.",
        ),
        kinds=(
            Kind(
                "Carry-On Suitcase",
                ("Hard-Shell", "Expandable", "Lightweight", "Aluminium"),
                (
                    "A carry-on that glides through airports and fits in overhead bins.",
                    "A light, tough suitcase for weekend trips and business travel.",
                ),
                (
                    "Four spinner wheels roll quietly in any direction.",
                    "A TSA-approved lock secures the zips.",
                    "Compression straps and a divider keep clothes neat.",
                ),
                (79.0, 399.0),
            ),
            Kind(
                "Travel Pillow",
                ("Memory Foam", "Inflatable", "Wraparound", "Ergonomic"),
                (
                    "Sleep upright on long flights without waking up with a stiff neck.",
                    "A travel pillow that packs small and supports your chin.",
                ),
                (
                    "The removable cover is machine washable.",
                    "Clips onto a bag strap when not in use.",
                    "Breathable fabric stays cool on overnight trips.",
                ),
                (12.0, 49.0),
            ),
        ),
    ),
}
