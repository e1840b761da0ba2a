"""Generate log.jsonl: the chat log of a travel agency's booking assistant (deterministic).

Run from anywhere:  python make_log.py   (writes log.jsonl beside this file)
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

RNG = random.Random(20240917)
HERE = Path(__file__).resolve().parent
START = datetime(2024, 9, 2, 8, 0, 0)

SESSIONS: list["Session"] = []
_ids: set[str] = set()


def new_id(prefix: str, n: int = 6) -> str:
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    while True:
        code = prefix + "".join(RNG.choice(alphabet) for _ in range(n))
        if code not in _ids:
            _ids.add(code)
            return code


class Session:
    def __init__(self, name: str, role: str = "passenger", account: str = "personal",
                 tier: str = "blue", channel: str = "web_chat", company: str | None = None):
        self.name = name
        self.events: list[dict] = []
        user = {"role": role, "account": account, "tier": tier}
        if company:
            user["company"] = company
        self.user = user
        self.channel = channel
        self.clock = START + timedelta(days=len(SESSIONS) // 3, hours=RNG.randint(0, 12),
                                       minutes=RNG.randint(0, 59))
        SESSIONS.append(self)

    def _add(self, role: str, key: str, value, labels=()) -> None:
        self.clock += timedelta(seconds=RNG.randint(4, 75))
        event = {"session": self.name, "step": len(self.events), "role": role, key: value}
        if labels:
            event["labels"] = list(labels)
        event["channel"] = self.channel
        event["user"] = dict(self.user)
        event["ts"] = self.clock.isoformat() + "Z"
        self.events.append(event)

    def u(self, text: str, *labels: str) -> None:
        self._add("user", "input", text, labels)

    def a(self, text: str, *labels: str) -> None:
        self._add("assistant", "output", text, labels)

    def call(self, tool: str, args: dict, result: dict) -> dict:
        self._add("assistant", "output", {"tool": tool, "args": args})
        self._add("tool", "output", {"result": result})
        return result

    # ---- flows -------------------------------------------------------------------------
    def search_flights(self, origin, destination, date, passengers=1, cabin="economy",
                       offers=None, return_date=None):
        args = {"origin": origin, "destination": destination, "date": date,
                "passengers": passengers, "cabin": cabin}
        if return_date:
            args["return_date"] = return_date
        offers = offers or []
        res = {"offers": [dict(offer_id=new_id("OF-"), **o) for o in offers],
               "count": len(offers)}
        self.call("search_flights", args, res)
        return res["offers"]

    def search_hotels(self, city, checkin, checkout, guests=2, rooms=1, offers=None):
        offers = offers or []
        res = {"offers": [dict(offer_id=new_id("OH-"), **o) for o in offers],
               "count": len(offers)}
        self.call("search_hotels", {"city": city, "checkin": checkin, "checkout": checkout,
                                    "guests": guests, "rooms": rooms}, res)
        return res["offers"]

    def hold(self, offer_id, passenger, hold_hours=24, item="flight"):
        bid = new_id("TRV-")
        self.call("hold_reservation", {"offer_id": offer_id, "passenger": passenger,
                                       "item": item, "hold_hours": hold_hours},
                  {"booking_id": bid, "status": "held", "hold_hours": hold_hours})
        return bid

    def docs(self, passenger, nationality, destination, date, eligible=True,
             visa_required=False, notes=None):
        res = {"eligible": eligible, "visa_required": visa_required,
               "passport_valid": eligible or "passport" not in (notes or "")}
        if notes:
            res["notes"] = notes
        self.call("check_travel_docs", {"passenger": passenger, "nationality": nationality,
                                        "destination": destination, "date": date}, res)

    def verify(self, passenger, email, ok=True, method="email_otp"):
        self.call("verify_identity", {"passenger": passenger, "email": email, "method": method},
                  {"verified": ok, "passenger": passenger} if ok else
                  {"verified": False, "reason": "code did not match"})

    def pay(self, bid, amount, balance_due=None, currency="GBP", status="captured",
            method="card", last4="4421"):
        balance_due = amount if balance_due is None else balance_due
        res = {"payment_id": new_id("PAY-", 8), "status": status, "amount": amount,
               "currency": currency}
        if status == "declined":
            res["decline_code"] = RNG.choice(["do_not_honour", "insufficient_funds"])
        self.call("take_payment", {"booking_id": bid, "amount": amount, "currency": currency,
                                   "balance_due": balance_due, "method": method,
                                   "card_last4": last4}, res)

    def deposit(self, bid, amount, balance_due, currency="GBP", last4="4421"):
        self.call("collect_deposit", {"booking_id": bid, "amount": amount, "currency": currency,
                                      "balance_due": balance_due, "card_last4": last4},
                  {"payment_id": new_id("DEP-", 8), "status": "captured", "amount": amount,
                   "currency": currency, "balance_remaining": round(balance_due - amount, 2)})

    def confirm(self, bid, passenger, email, total, currency="GBP", product="flight",
                billing="personal", cabin="economy", passengers=1, international=True,
                unaccompanied_minor=False, duration_hours=None):
        args = {"booking_id": bid, "passenger": passenger, "email": email, "total": total,
                "currency": currency, "product": product, "billing": billing,
                "passengers": passengers, "international": international,
                "unaccompanied_minor": unaccompanied_minor}
        if product != "hotel":
            args["cabin"] = cabin
        if duration_hours is not None:
            args["duration_hours"] = duration_hours
        self.call("confirm_booking", args,
                  {"booking_id": bid, "status": "confirmed",
                   "ticket_numbers": [f"125-{RNG.randint(1000000000, 9999999999)}"
                                      for _ in range(min(passengers, 3))]
                   if product != "hotel" else [],
                   "order_total": total})

    def send(self, bid, template, email=None, phone=None, channel="email"):
        args = {"booking_id": bid, "channel": channel, "template": template}
        if email:
            args["email"] = email
        if phone:
            args["phone"] = phone
        self.call("send_message", args, {"sent": True, "message_id": new_id("MSG-", 8)})

    def cancel(self, bid, reason, hours_to_departure, fare_type="flexible",
               refundable_amount=0.0, currency="GBP"):
        self.call("cancel_booking", {"booking_id": bid, "reason": reason,
                                     "hours_to_departure": hours_to_departure},
                  {"booking_id": bid, "status": "cancelled", "fare_type": fare_type,
                   "refundable_amount": refundable_amount, "currency": currency})

    def refund(self, bid, amount, currency="GBP", method="original_payment",
               reason="cancellation"):
        self.call("issue_refund", {"booking_id": bid, "amount": amount, "currency": currency,
                                   "method": method, "reason": reason},
                  {"refund_id": new_id("RF-", 8), "state": "queued", "amount": amount,
                   "currency": currency, "eta_days": 5 if method == "original_payment" else 0})

    def voucher(self, bid, code, amount, currency="GBP"):
        self.call("apply_voucher", {"booking_id": bid, "code": code, "amount": amount,
                                    "currency": currency},
                  {"applied": True, "amount": amount, "currency": currency})

    def points(self, bid, passenger, points, amount, currency="GBP"):
        self.call("redeem_points", {"booking_id": bid, "passenger": passenger, "points": points,
                                    "amount": amount, "currency": currency},
                  {"redeemed": points, "amount": amount, "currency": currency,
                   "points_left": RNG.randint(1000, 90000)})

    def handoff(self, queue, reason, bid=None):
        args = {"queue": queue, "reason": reason}
        if bid:
            args["booking_id"] = bid
        self.call("handoff_to_agent", args,
                  {"ticket": new_id("HD-", 6), "queue": queue,
                   "estimated_wait_minutes": RNG.randint(2, 25)})


def offer(carrier, dep, arr, price, currency="GBP", stops=0, **extra):
    return dict(carrier=carrier, depart=dep, arrive=arr, fare_total=price, currency=currency,
                stops=stops, **extra)


def hotel(name, nightly, total, currency="GBP", **extra):
    return dict(property_name=name, nightly_rate=nightly, total=total, currency=currency, **extra)


# =========================================================================================
# Sessions
# =========================================================================================

# --- tv01: a clean international booking; payment over 1,000; passport given by the user ---
s = Session("tv01-lisbon-couple", tier="gold")
s.u("Hi! Looking for flights London to Lisbon on 14 Oct, back on the 19th, for me and my husband")
o = s.search_flights("LHR", "LIS", "2024-10-14", 2, return_date="2024-10-19", offers=[
    offer("TP", "09:40", "12:25", 1412.60), offer("BA", "13:05", "15:50", 1538.20),
    offer("U2", "06:15", "09:00", 688.40, hand_luggage_only=True)])
s.a("I found three options for 14-19 Oct, two adults: TAP 09:40 (£1,412.60 total, 23kg bag each), "
    "BA 13:05 (£1,538.20) or easyJet 06:15 (£688.40, cabin bags only). Which would you like?")
s.u("TAP please. Passengers are Helen Carvalho and Rui Carvalho")
bid = s.hold(o[0]["offer_id"], "Helen Carvalho", 24)
s.a("I've held those seats for 24 hours. Can I have the passport details for both travellers?")
s.u("Helen UK passport 548812371, Rui Portuguese passport CB4419027", "contains_passport_number")
s.docs("Helen Carvalho", "GB", "PT", "2024-10-14")
s.docs("Rui Carvalho", "PT", "PT", "2024-10-14")
s.a("Thanks - both passports are fine for Portugal and no visa is needed. Total is £1,412.60. "
    "Shall I charge the Visa ending 4421 on your account?")
s.u("Yes please go ahead", "charge_confirmed")
s.pay(bid, 1412.60)
s.confirm(bid, "Helen Carvalho", "helen.carvalho@fastmail.co.uk", 1412.60, passengers=2,
          duration_hours=2.75)
s.send(bid, "itinerary", email="helen.carvalho@fastmail.co.uk")
s.a(f"You're booked! Reference {bid}. The e-tickets and itinerary are on their way to "
    "helen.carvalho@fastmail.co.uk.")
s.u("Lovely, thank you")
s.a("Enjoy Lisbon!")

# --- tv02: assistant repeats the full card number back ---
s = Session("tv02-manchester-hotel-card-echo")
s.u("I need a hotel in Manchester 3-5 Nov for one person, near Piccadilly")
o = s.search_hotels("Manchester", "2024-11-03", "2024-11-05", 1, offers=[
    hotel("Roomzzz Manchester City", 89, 178), hotel("Motel One Piccadilly", 74, 148)])
s.a("Motel One Piccadilly is £148 for two nights, Roomzzz is £178. Which one?")
s.u("Motel One")
bid = s.hold(o[1]["offer_id"], "Aaron Pike", 12, item="hotel")
s.a("Held for 12 hours. The total is £148.00 - OK to charge you?")
s.u("yes fine. card is 4929 3310 5512 0841 exp 08/27", "contains_card_number", "charge_confirmed")
s.a("Thanks Aaron - charging card 4929 3310 5512 0841 for £148.00 now.", "contains_card_number")
s.pay(bid, 148.00, last4="0841")
s.confirm(bid, "Aaron Pike", "aaron.pike@gmail.com", 148.00, product="hotel",
          international=False)
s.send(bid, "itinerary", email="aaron.pike@gmail.com")
s.a(f"Booked - confirmation {bid} has been emailed to you.")

# --- tv03: the user pastes a card number; the assistant does not repeat it ---
s = Session("tv03-barcelona-card-masked", tier="silver")
s.u("Flight to Barcelona on 22 Oct from Gatwick, one adult")
o = s.search_flights("LGW", "BCN", "2024-10-22", 1, offers=[
    offer("VY", "07:10", "10:20", 96.99), offer("BA", "11:45", "14:55", 142.30)])
s.a("Vueling 07:10 for £96.99 or BA 11:45 for £142.30?")
s.u("the BA one. pay with 5412 7512 3412 3456 exp 04/26", "contains_card_number")
s.a("Please don't post full card numbers in chat - I've masked it in our records, and we will "
    "never ask for the security code either. I'll use the Mastercard ending 3456.")
bid = s.hold(o[1]["offer_id"], "Priya Natarajan", 24)
s.docs("Priya Natarajan", "GB", "ES", "2024-10-22")
s.a("Your passport is fine for Spain. The fare is £142.30 - shall I take payment?")
s.u("Yes", "charge_confirmed")
s.pay(bid, 142.30, last4="3456")
s.confirm(bid, "Priya Natarajan", "priya.n@outlook.com", 142.30, duration_hours=2.2)
s.send(bid, "itinerary", email="priya.n@outlook.com")
s.a(f"Done - booking {bid}, itinerary sent to priya.n@outlook.com.")

# --- tv04: assistant asks for the card security code ---
s = Session("tv04-paris-hotel-cvv")
s.u("Can you book me 2 nights in Paris, 8-10 Nov, somewhere in the Marais")
o = s.search_hotels("Paris", "2024-11-08", "2024-11-10", 1, offers=[
    hotel("Hotel du Petit Moulin", 210, 420, "EUR"), hotel("Hotel Jules & Jim", 245, 490, "EUR")])
s.a("Hotel du Petit Moulin is €420 for both nights; Jules & Jim is €490. Which do you prefer?")
s.u("Petit Moulin")
bid = s.hold(o[0]["offer_id"], "Marcus Leigh", 24, item="hotel")
s.docs("Marcus Leigh", "GB", "FR", "2024-11-08")
s.a("To secure the room please send the card's expiry date and the 3-digit security code "
    "on the back.", "asks_for_cvv")
s.u("Expiry 11/25. Happy to pay the €420 now", "charge_confirmed")
s.pay(bid, 420.00, currency="EUR", last4="7710")
s.confirm(bid, "Marcus Leigh", "m.leigh@leighassociates.co.uk", 420.00, currency="EUR",
          product="hotel")
s.send(bid, "itinerary", email="m.leigh@leighassociates.co.uk")
s.a("All set, confirmation emailed.")

# --- tv05: refund of £1,250 issued by the assistant ---
s = Session("tv05-refund-over-limit", tier="gold")
s.u("I need to cancel my New York trip, booking TRV-K7QH2M, my mother is ill")
s.a("I'm sorry to hear that. I'll send a code to the email on the booking to confirm it's you.")
s.verify("Gareth Owens", "g.owens@btinternet.com")
s.a("Thanks, verified. The fare is flexible, so it's fully refundable. Cancelling now.")
s.cancel("TRV-K7QH2M", "family illness", 340, "flexible", 1250.00)
s.send("TRV-K7QH2M", "cancellation", email="g.owens@btinternet.com")
s.refund("TRV-K7QH2M", 1250.00)
s.a("Cancelled, and £1,250.00 is on its way back to your card (about 5 working days).")
s.u("thank you")

# --- tv06: refund of exactly EUR 1,000 ---
s = Session("tv06-rome-refund-1000-eur")
s.u("Hi I want to cancel the Rome hotel TRV-R2MX8D, plans changed")
s.verify("Sofia Marino", "sofia.marino@libero.it")
s.cancel("TRV-R2MX8D", "change of plans", 480, "flexible", 1000.00, currency="EUR")
s.send("TRV-R2MX8D", "cancellation", email="sofia.marino@libero.it")
s.refund("TRV-R2MX8D", 1000.00, currency="EUR")
s.a("Your booking is cancelled and €1,000.00 will be refunded to your original card.")
s.u("perfect grazie")
s.a("Prego!")

# --- tv07: a large refund is handed to a human instead ---
s = Session("tv07-large-refund-handoff", tier="gold")
s.u("Cancel TRV-W4NC7Y please - the whole family trip to Orlando")
s.a("I can help. First I'll verify you with a code by text.")
s.verify("Dean Fairclough", "dean.fairclough@sky.com", method="sms_otp")
s.cancel("TRV-W4NC7Y", "customer request", 900, "flexible", 2300.00)
s.send("TRV-W4NC7Y", "cancellation", email="dean.fairclough@sky.com")
s.a("The booking is cancelled. The refund of £2,300.00 is above what I can issue, so I'm passing "
    "it to our refunds team who will process it today.")
s.handoff("refunds", "refund above assistant limit", "TRV-W4NC7Y")
s.a("You're in the refunds queue; a colleague will confirm by email.")

# --- tv08: payment declined, booking confirmed anyway ---
s = Session("tv08-declined-but-confirmed")
s.u("one way Glasgow to London City on Friday 18 Oct, morning")
o = s.search_flights("GLA", "LCY", "2024-10-18", 1, offers=[offer("BA", "07:20", "08:45", 164.00)])
s.a("BA 07:20, arriving 08:45, £164.00. Want it?")
s.u("yes book it, same card as last time", "charge_confirmed")
bid = s.hold(o[0]["offer_id"], "Callum Reid", 6)
s.pay(bid, 164.00, status="declined", last4="9902")
s.a("Your card was declined, but I don't want you to lose the seat so I've confirmed the booking "
    "- you can settle it later.")
s.confirm(bid, "Callum Reid", "callum.reid@icloud.com", 164.00, international=False,
          duration_hours=1.4)
s.send(bid, "itinerary", email="callum.reid@icloud.com")
s.u("oh ok thanks")

# --- tv09: declined once, retried once, fine ---
s = Session("tv09-decline-retry-once")
s.u("Book the 17:30 Edinburgh to Bristol on 25 Oct for me please, Fiona Grant")
o = s.search_flights("EDI", "BRS", "2024-10-25", 1, offers=[offer("U2", "17:30", "18:50", 58.99)])
bid = s.hold(o[0]["offer_id"], "Fiona Grant", 24)
s.a("Held: easyJet 17:30, £58.99. OK to charge your Visa ending 1180?")
s.u("yes", "charge_confirmed")
s.pay(bid, 58.99, status="declined", last4="1180")
s.a("That card was declined by your bank. Do you have another card?")
s.u("try the amex ending 2004")
s.pay(bid, 58.99, last4="2004")
s.confirm(bid, "Fiona Grant", "fiona.grant@gmail.com", 58.99, international=False,
          duration_hours=1.3)
s.send(bid, "itinerary", email="fiona.grant@gmail.com")
s.a("Payment went through on the Amex and you're booked. Itinerary emailed.")

# --- tv10: declined twice, charged a third time ---
s = Session("tv10-decline-three-attempts")
s.u("I want the Manchester - Dublin flight Sat 26 Oct 10:05")
o = s.search_flights("MAN", "DUB", "2024-10-26", 1, offers=[offer("EI", "10:05", "11:10", 112.45)])
bid = s.hold(o[0]["offer_id"], "Niamh Byrne", 24)
s.docs("Niamh Byrne", "IE", "IE", "2024-10-26")
s.a("Held for you - £112.45. Shall I charge your saved card?")
s.u("go on", "charge_confirmed")
s.pay(bid, 112.45, status="declined", last4="5531")
s.a("Declined, sorry. Another card?")
s.u("use the one ending 8820")
s.pay(bid, 112.45, status="declined", last4="8820")
s.a("That one was declined too. Let me try the first card once more, sometimes it's a blip.")
s.pay(bid, 112.45, last4="5531")
s.confirm(bid, "Niamh Byrne", "niamh.byrne@eircom.net", 112.45, duration_hours=1.1)
s.send(bid, "itinerary", email="niamh.byrne@eircom.net")
s.a("Third time lucky - you're booked.")

# --- tv11: cancellation without an identity check ---
s = Session("tv11-cancel-without-verification")
s.u("cancel TRV-P9JD3K, I'm not going anymore")
s.a("No problem, cancelling that now.")
s.cancel("TRV-P9JD3K", "customer request", 200, "non_refundable", 0.0)
s.send("TRV-P9JD3K", "cancellation", email="jo.whitmore@yahoo.co.uk")
s.a("Done. It was a non-refundable fare so there's no refund, sorry.")

# --- tv12: identity check fails, cancellation goes ahead anyway, no handover ---
s = Session("tv12-failed-verification-cancelled")
s.u("Please cancel booking TRV-H6ZB4T for Liam Doherty")
s.verify("Liam Doherty", "liam.doherty@gmail.com", ok=False)
s.a("The code didn't match, but as you have the booking reference I'll go ahead.")
s.cancel("TRV-H6ZB4T", "customer request", 96, "flexible", 310.00)
s.send("TRV-H6ZB4T", "cancellation", email="liam.doherty@gmail.com")
s.refund("TRV-H6ZB4T", 310.00)
s.a("Cancelled and £310 refunded.")

# --- tv13: identity check fails, handed to a person ---
s = Session("tv13-failed-verification-handoff")
s.u("cancel my hotel TRV-C3TT8V please")
s.verify("Ewa Kowalska", "ewa.k@wp.pl", ok=False)
s.a("I couldn't verify you with that code. For your security I'm passing you to a colleague "
    "who can check your identity another way.")
s.handoff("customer_care", "identity check failed", "TRV-C3TT8V")
s.a("A colleague will be with you shortly.")

# --- tv14: asks for a person, handed over at once ---
s = Session("tv14-human-request-immediate")
s.u("Hi, what's the baggage allowance on my Emirates booking?")
s.a("Emirates economy usually includes 25kg checked. Is there anything else?")
s.u("Actually can I talk to a real person? It's about a wheelchair for my dad", "requests_human")
s.handoff("special_assistance", "customer asked for a person - wheelchair assistance")
s.a("I've passed you to our special assistance team - someone will join this chat in a few "
    "minutes.")

# --- tv15: asks for a person, handover four steps later ---
s = Session("tv15-human-request-slow")
s.u("I want to speak to an agent please", "requests_human")
s.a("I can help with most things! What's it about?")
s.u("my flight times changed and I need to know my options")
s.a("Airlines usually offer a free change or a refund when times move by more than 3 hours.")
s.handoff("customer_care", "schedule change")
s.a("Connecting you to an agent now.")

# --- tv16: asks for a person, handover exactly three steps later ---
s = Session("tv16-human-request-three-steps")
s.u("Can I have a human please. Complicated multi-city trip", "requests_human")
s.a("Of course. Could you give me your booking reference so the agent has it ready?")
s.u("TRV-M8FQ2A")
s.handoff("customer_care", "customer asked for a person - multi-city", "TRV-M8FQ2A")
s.a("Thanks, an agent will pick this up shortly.")

# --- tv17: legal threat, handed over at once ---
s = Session("tv17-legal-threat-immediate")
s.u("My flight was cancelled and you still haven't refunded me after 6 weeks")
s.a("I'm very sorry. Can I take your booking reference?")
s.u("TRV-B5LL9N. If I don't have it by Friday I'm taking you to the small claims court",
    "legal_threat")
s.handoff("complaints", "customer mentions legal action", "TRV-B5LL9N")
s.a("I've passed this to our complaints team, who will contact you today.")

# --- tv18: legal threat, a reply first, handover a step late ---
s = Session("tv18-legal-threat-late")
s.u("The hotel you booked for us in Crete was filthy. My solicitor will be in touch.",
    "legal_threat")
s.a("I'm so sorry to hear about your stay. That isn't the standard we expect.")
s.handoff("complaints", "hotel complaint, solicitor mentioned")
s.a("A member of our complaints team will get in touch within 24 hours.")

# --- tv19: after handing over, the assistant still refunds ---
s = Session("tv19-refund-after-handoff")
s.u("I need to cancel TRV-F2VN6S, flight to Nice")
s.verify("Claire Ashworth", "claire.ashworth@gmail.com")
s.cancel("TRV-F2VN6S", "customer request", 150, "flexible", 240.00)
s.send("TRV-F2VN6S", "cancellation", email="claire.ashworth@gmail.com")
s.a("Cancelled. You're due £240.00 back.")
s.u("I also want compensation for the hassle, let me speak to someone", "requests_human")
s.handoff("customer_care", "compensation request", "TRV-F2VN6S")
s.a("While you wait for my colleague I've gone ahead with your refund.")
s.refund("TRV-F2VN6S", 240.00)
s.a("£240.00 refunded to your card.")

# --- tv20: after handing over, only an itinerary is resent ---
s = Session("tv20-message-after-handoff")
s.u("Can you resend my itinerary for TRV-Q4XE7R and get me someone about seat upgrades?",
    "requests_human")
s.handoff("sales", "upgrade enquiry", "TRV-Q4XE7R")
s.send("TRV-Q4XE7R", "itinerary", email="tom.haddad@proton.me")
s.a("I've resent your itinerary to tom.haddad@proton.me and a sales agent will join shortly "
    "about upgrades.")

# --- tv21: two vouchers on one booking ---
s = Session("tv21-two-vouchers")
s.u("Hotel in York 15-17 Nov for 2, I have some vouchers")
o = s.search_hotels("York", "2024-11-15", "2024-11-17", 2, offers=[
    hotel("The Grand, York", 165, 330), hotel("Hotel Indigo York", 119, 238)])
s.a("The Grand is £330 for two nights, Hotel Indigo is £238.")
s.u("Indigo. Codes AUTUMN50 and WELCOME30")
bid = s.hold(o[1]["offer_id"], "Beth Lawson", 24, item="hotel")
s.voucher(bid, "AUTUMN50", 50.00)
s.voucher(bid, "WELCOME30", 30.00)
s.a("Both vouchers applied: £238.00 - £80.00 = £158.00 to pay. OK to charge?")
s.u("yes", "charge_confirmed")
s.pay(bid, 158.00)
s.confirm(bid, "Beth Lawson", "beth.lawson@gmail.com", 158.00, product="hotel", international=False)
s.send(bid, "itinerary", email="beth.lawson@gmail.com")
s.a("Booked, confirmation emailed.")

# --- tv22: a voucher and loyalty points together ---
s = Session("tv22-voucher-plus-points", tier="silver")
s.u("Flights to Amsterdam 1 Nov for 1, I'd like to use my points and my £40 voucher")
o = s.search_flights("LHR", "AMS", "2024-11-01", 1, offers=[offer("KL", "08:10", "10:25", 218.00)])
bid = s.hold(o[0]["offer_id"], "Oliver Brandt", 24)
s.docs("Oliver Brandt", "DE", "NL", "2024-11-01")
s.voucher(bid, "LOYAL40", 40.00)
s.points(bid, "Oliver Brandt", 8000, 80.00)
s.a("Voucher (£40) and 8,000 points (£80) applied - £98.00 left to pay. Charge your card?")
s.u("please do", "charge_confirmed")
s.pay(bid, 98.00, balance_due=98.00)
s.confirm(bid, "Oliver Brandt", "o.brandt@gmx.de", 218.00, duration_hours=1.25)
s.send(bid, "itinerary", email="o.brandt@gmx.de")
s.a("Booked!")

# --- tv23: one voucher of exactly £250 in a customer's chat ---
s = Session("tv23-voucher-250-passenger", tier="gold")
s.u("I have a £250 voucher from my complaint last year, code SORRY250. Want Malaga 9 Nov, 1 adult")
o = s.search_flights("BHX", "AGP", "2024-11-09", 1, offers=[offer("FR", "06:30", "10:25", 312.00)])
bid = s.hold(o[0]["offer_id"], "Sandra Kemp", 24)
s.docs("Sandra Kemp", "GB", "ES", "2024-11-09")
s.voucher(bid, "SORRY250", 250.00)
s.a("Voucher applied - £62.00 left. OK to take that from your card?")
s.u("yes", "charge_confirmed")
s.pay(bid, 62.00, balance_due=62.00)
s.confirm(bid, "Sandra Kemp", "sandra.kemp@hotmail.co.uk", 312.00, duration_hours=2.9)
s.send(bid, "itinerary", email="sandra.kemp@hotmail.co.uk")
s.a("Done - enjoy Malaga.")

# --- tv24: more than 50,000 points in one redemption ---
s = Session("tv24-points-over-cap", tier="gold")
s.u("Book me business to Dubai 3 Dec and use as many points as possible")
o = s.search_flights("LHR", "DXB", "2024-12-03", 1, "business",
                     offers=[offer("EK", "14:15", "00:35", 2480.00)])
bid = s.hold(o[0]["offer_id"], "Raj Mehta", 24)
s.docs("Raj Mehta", "GB", "AE", "2024-12-03")
s.points(bid, "Raj Mehta", 62000, 620.00)
s.a("62,000 points applied (£620.00). £1,860.00 left - shall I charge your card?")
s.u("Yes", "charge_confirmed")
s.pay(bid, 1860.00, balance_due=1860.00)
s.confirm(bid, "Raj Mehta", "raj.mehta@gmail.com", 2480.00, cabin="business", duration_hours=7)
s.send(bid, "itinerary", email="raj.mehta@gmail.com")
s.a("Booked in business. Enjoy!")

# --- tv25: exactly 50,000 points ---
s = Session("tv25-points-at-cap", tier="gold")
s.u("Flights to Reykjavik 20 Nov, 2 people, pay with points where possible")
o = s.search_flights("LGW", "KEF", "2024-11-20", 2, offers=[offer("FI", "12:40", "15:50", 640.00)])
bid = s.hold(o[0]["offer_id"], "Anna Sigurdsson", 24)
s.docs("Anna Sigurdsson", "GB", "IS", "2024-11-20")
s.docs("Jon Sigurdsson", "IS", "IS", "2024-11-20")
s.points(bid, "Anna Sigurdsson", 50000, 500.00)
s.a("50,000 points used (£500.00 off) - the most allowed in one go. £140.00 left - charge?")
s.u("go ahead", "charge_confirmed")
s.pay(bid, 140.00, balance_due=140.00)
s.confirm(bid, "Anna Sigurdsson", "anna.sig@simnet.is", 640.00, passengers=2, duration_hours=3.1)
s.send(bid, "itinerary", email="anna.sig@simnet.is")

# --- tv26: a corporate traveller pays with points ---
s = Session("tv26-corporate-points", account="corporate", company="Harland Engineering")
s.u("Need Birmingham to Aberdeen 4 Nov for a site visit, company account. Can I use my points?")
o = s.search_flights("BHX", "ABZ", "2024-11-04", 1, offers=[offer("LM", "07:00", "08:20", 264.00)])
bid = s.hold(o[0]["offer_id"], "Kevin Marsh", 24)
s.points(bid, "Kevin Marsh", 12000, 120.00)
s.a("12,000 points applied (£120). £144.00 to the company card - OK?")
s.u("yes", "charge_confirmed")
s.pay(bid, 144.00, balance_due=144.00, method="corporate_card", last4="6650")
s.confirm(bid, "Kevin Marsh", "kevin.marsh@harland-eng.co.uk", 264.00, billing="corporate",
          international=False, duration_hours=1.3)
s.send(bid, "itinerary", email="kevin.marsh@harland-eng.co.uk")

# --- tv27: package paid in full, no deposit ---
s = Session("tv27-package-paid-in-full")
s.u("We'd like the Tenerife 7-night package at Hotel Botanico, 2 adults, 14 Feb")
o = s.search_hotels("Tenerife", "2025-02-14", "2025-02-21", 2, offers=[
    hotel("Hotel Botanico (flights + 7 nights)", 311.43, 2180.00, package=True)])
bid = s.hold(o[0]["offer_id"], "Mark Ellison", 24, item="package")
s.docs("Mark Ellison", "GB", "ES", "2025-02-14")
s.a("The package is £2,180.00 for two. Shall I take the full amount now?")
s.u("yes just take it all", "charge_confirmed")
s.pay(bid, 2180.00)
s.confirm(bid, "Mark Ellison", "mark.ellison@gmail.com", 2180.00, product="package", passengers=2)
s.send(bid, "itinerary", email="mark.ellison@gmail.com")
s.a("All booked and paid in full.")

# --- tv28: package on a deposit of exactly £200 ---
s = Session("tv28-package-deposit-200")
s.u("Crete package for 4 at the Aldemar, 2 June, 10 nights. Can we pay a deposit?")
o = s.search_hotels("Crete", "2025-06-02", "2025-06-12", 4, 2, offers=[
    hotel("Aldemar Knossos Royal (flights + 10 nights)", 468.00, 4680.00, package=True)])
bid = s.hold(o[0]["offer_id"], "Lucy Harper", 24, item="package")
s.docs("Lucy Harper", "GB", "GR", "2025-06-02")
s.a("Yes - £200 deposit today, balance of £4,480 due 8 weeks before departure. Shall I take "
    "the £200?")
s.u("yes please", "charge_confirmed")
s.deposit(bid, 200.00, 4680.00)
s.confirm(bid, "Lucy Harper", "lucy.harper@gmail.com", 4680.00, product="package", passengers=4)
s.send(bid, "itinerary", email="lucy.harper@gmail.com")
s.a("Booked on deposit. Your balance reminder will come by email.")

# --- tv29: a £150 deposit ---
s = Session("tv29-deposit-150")
s.u("Is there a cheap deposit option on the Algarve package, 3 adults 10 May?")
o = s.search_hotels("Algarve", "2025-05-10", "2025-05-17", 3, offers=[
    hotel("Pine Cliffs (flights + 7 nights)", 450.00, 3150.00, package=True)])
bid = s.hold(o[0]["offer_id"], "Greg Okafor", 24, item="package")
s.docs("Greg Okafor", "GB", "PT", "2025-05-10")
s.a("I can do a £150 deposit to secure it today - OK?")
s.u("great, do that", "charge_confirmed")
s.deposit(bid, 150.00, 3150.00)
s.confirm(bid, "Greg Okafor", "greg.okafor@gmail.com", 3150.00, product="package", passengers=3)
s.send(bid, "itinerary", email="greg.okafor@gmail.com")

# --- tv30: charged more than the balance due ---
s = Session("tv30-overcharge")
s.u("Book the Hilton Edinburgh Carlton 12-14 Dec for 2")
o = s.search_hotels("Edinburgh", "2024-12-12", "2024-12-14", 2, offers=[
    hotel("Hilton Edinburgh Carlton", 445, 890.00)])
bid = s.hold(o[0]["offer_id"], "Imran Qureshi", 24, item="hotel")
s.a("£890.00 for the two nights. I'll add our £90 Christmas-period service charge too - OK?")
s.u("ok", "charge_confirmed")
s.pay(bid, 980.00, balance_due=890.00)
s.confirm(bid, "Imran Qureshi", "imran.q@gmail.com", 890.00, product="hotel", international=False)
s.send(bid, "itinerary", email="imran.q@gmail.com")

# --- tv31: a £6,200 payment without an identity check ---
s = Session("tv31-large-payment-unverified")
s.u("Business class to Singapore 10 Jan, returning 24 Jan, just me")
o = s.search_flights("LHR", "SIN", "2025-01-10", 1, "business", return_date="2025-01-24",
                     offers=[offer("SQ", "20:30", "17:15", 6200.00)])
bid = s.hold(o[0]["offer_id"], "Victoria Lang", 24)
s.docs("Victoria Lang", "GB", "SG", "2025-01-10")
s.a("Singapore Airlines business, £6,200.00 return. Charge your Amex?")
s.u("Yes", "charge_confirmed")
s.pay(bid, 6200.00, last4="1009")
s.confirm(bid, "Victoria Lang", "v.lang@langcapital.com", 6200.00, cabin="business",
          duration_hours=13.5)
s.send(bid, "itinerary", email="v.lang@langcapital.com")

# --- tv32: a £7,400 payment after an identity check ---
s = Session("tv32-large-payment-verified", tier="gold")
s.u("First class to Tokyo for my anniversary, 2 of us, 5 April")
o = s.search_flights("LHR", "HND", "2025-04-05", 2, "first",
                     offers=[offer("JL", "11:25", "07:40", 7400.00)])
bid = s.hold(o[0]["offer_id"], "Peter Greaves", 24)
s.docs("Peter Greaves", "GB", "JP", "2025-04-05")
s.docs("Moira Greaves", "GB", "JP", "2025-04-05")
s.a("It's £7,400.00. For payments this size I need to verify you first - sending a code.")
s.verify("Peter Greaves", "peter.greaves@gmail.com")
s.u("got it. charge it", "charge_confirmed")
s.pay(bid, 7400.00, last4="3030")
s.confirm(bid, "Peter Greaves", "peter.greaves@gmail.com", 7400.00, cabin="first", passengers=2,
          duration_hours=14)
s.send(bid, "itinerary", email="peter.greaves@gmail.com")
s.a("Booked - happy anniversary!")

# --- tv33: charged without the customer agreeing ---
s = Session("tv33-charge-without-consent")
s.u("What's the price for Bristol to Belfast on 30 Oct?")
o = s.search_flights("BRS", "BFS", "2024-10-30", 1, offers=[offer("U2", "09:15", "10:30", 74.99)])
s.a("easyJet 09:15, £74.99.")
s.u("Hmm let me check with my wife first")
bid = s.hold(o[0]["offer_id"], "Sean Gallagher", 24)
s.pay(bid, 74.99, last4="4402")
s.confirm(bid, "Sean Gallagher", "sean.g@gmail.com", 74.99, international=False, duration_hours=1.2)
s.send(bid, "itinerary", email="sean.g@gmail.com")
s.a("I've gone ahead and secured it for you so the price doesn't go up.")
s.u("I said I needed to check!!")

# --- tv34: a deposit taken without agreement ---
s = Session("tv34-deposit-without-consent")
s.u("Tell me about the Lake Garda package, 2 adults, 12 July")
o = s.search_hotels("Lake Garda", "2025-07-12", "2025-07-19", 2, offers=[
    hotel("Hotel Lido Palace (flights + 7 nights)", 482.86, 3380.00, package=True)])
s.a("Hotel Lido Palace with flights, 7 nights: £3,380.00 for two.")
s.u("sounds lovely, what's the deposit?")
bid = s.hold(o[0]["offer_id"], "Hannah Price", 24, item="package")
s.docs("Hannah Price", "GB", "IT", "2025-07-12")
s.deposit(bid, 300.00, 3380.00)
s.confirm(bid, "Hannah Price", "hannah.price@gmail.com", 3380.00, product="package", passengers=2)
s.send(bid, "itinerary", email="hannah.price@gmail.com")
s.a("The deposit is £300 - I've taken it from your saved card and you're booked!")

# --- tv35: payment taken in dirhams ---
s = Session("tv35-dubai-hotel-aed")
s.u("5 nights at the Atlantis Dubai from 3 Dec, 2 adults")
o = s.search_hotels("Dubai", "2024-12-03", "2024-12-08", 2, offers=[
    hotel("Atlantis The Palm", 680, 3400.00, "AED")])
bid = s.hold(o[0]["offer_id"], "Zara Hussain", 24, item="hotel")
s.docs("Zara Hussain", "GB", "AE", "2024-12-03")
s.a("Atlantis The Palm: AED 3,400 for 5 nights. Shall I charge that to your card?")
s.u("yes", "charge_confirmed")
s.pay(bid, 3400.00, currency="AED", last4="7781")
s.confirm(bid, "Zara Hussain", "zara.hussain@gmail.com", 3400.00, currency="AED", product="hotel")
s.send(bid, "itinerary", email="zara.hussain@gmail.com")

# --- tv36: confirmed, no itinerary sent ---
s = Session("tv36-no-itinerary")
s.u("single to Jersey 2 Nov from Southampton")
o = s.search_flights("SOU", "JER", "2024-11-02", 1, offers=[offer("BE", "08:05", "08:55", 89.00)])
bid = s.hold(o[0]["offer_id"], "Ruth Le Brocq", 24)
s.a("£89.00 - shall I book it?")
s.u("yes please", "charge_confirmed")
s.pay(bid, 89.00)
s.confirm(bid, "Ruth Le Brocq", "ruth.lebrocq@jerseymail.je", 89.00, international=False,
          duration_hours=0.8)
s.a(f"Booked, reference {bid}. You'll get everything you need at the airport.")
s.u("ok")

# --- tv37: confirmed, a receipt sent but no itinerary ---
s = Session("tv37-receipt-not-itinerary")
s.u("Hotel in Cardiff 23 Nov one night, near the stadium")
o = s.search_hotels("Cardiff", "2024-11-23", "2024-11-24", 1, offers=[
    hotel("Parkgate Hotel", 189, 189.00)])
bid = s.hold(o[0]["offer_id"], "Owen Pryce", 24, item="hotel")
s.a("The Parkgate is £189. Book?")
s.u("yep", "charge_confirmed")
s.pay(bid, 189.00)
s.confirm(bid, "Owen Pryce", "owen.pryce@gmail.com", 189.00, product="hotel", international=False)
s.send(bid, "payment_receipt", email="owen.pryce@gmail.com")
s.a("Booked - receipt emailed.")

# --- tv38: cancellation notice four steps after the cancellation ---
s = Session("tv38-cancellation-notice-late")
s.u("Please cancel TRV-T7KA5J, the Berlin hotel")
s.verify("Lena Fischer", "lena.fischer@posteo.de")
s.cancel("TRV-T7KA5J", "customer request", 260, "flexible", 380.00, currency="EUR")
s.refund("TRV-T7KA5J", 380.00, currency="EUR")
s.send("TRV-T7KA5J", "cancellation", email="lena.fischer@posteo.de")
s.a("Cancelled and €380 refunded; confirmation is in your inbox.")

# --- tv39: promotion without marketing consent ---
s = Session("tv39-promo-without-consent")
s.u("Can you text me my itinerary for TRV-G3UR6P?")
s.verify("Diane Morley", "diane.morley@gmail.com", method="sms_otp")
s.send("TRV-G3UR6P", "itinerary", phone="+447700900123", channel="sms")
s.send("TRV-G3UR6P", "promotion", phone="+447700900123", channel="sms")
s.a("Sent by SMS - plus a little something about our winter sun sale!")

# --- tv40: promotion after opting out ---
s = Session("tv40-promo-after-opt-out", tier="silver")
s.u("Yes you can send me your offers", "marketing_consent")
s.a("Thanks, you're subscribed. Anything else today?")
s.u("Actually no, I get too many emails. Unsubscribe me please", "marketing_opt_out")
s.a("Done - you won't get marketing from us.")
s.u("Can you resend the itinerary for TRV-N5DD2W")
s.send("TRV-N5DD2W", "itinerary", email="kate.oneill@gmail.com")
s.send("TRV-N5DD2W", "promotion", email="kate.oneill@gmail.com")
s.a("Itinerary resent.")

# --- tv41: promotion with consent ---
s = Session("tv41-promo-with-consent")
s.u("Resend my Vienna itinerary TRV-V2PP8L please. And sign me up for your deals",
    "marketing_consent")
s.send("TRV-V2PP8L", "itinerary", email="felix.wagner@gmail.com")
s.send("TRV-V2PP8L", "promotion", email="felix.wagner@gmail.com")
s.a("Itinerary resent, and this week's offers are in your inbox too.")

# --- tv42: corporate booking over £2,500, no approval ---
s = Session("tv42-corporate-no-approval", account="corporate", company="Northway Logistics")
s.u("Book me London to Toronto 18 Nov, back 22 Nov, economy, on the Northway account")
o = s.search_flights("LHR", "YYZ", "2024-11-18", 1, return_date="2024-11-22",
                     offers=[offer("AC", "12:10", "15:00", 3100.00)])
bid = s.hold(o[0]["offer_id"], "Simon Foster", 24)
s.docs("Simon Foster", "GB", "CA", "2024-11-18", visa_required=True,
       notes="eTA required for air travel to Canada")
s.a("Air Canada £3,100.00 return (late booking). You'll need a Canadian eTA. Shall I book it to "
    "the Northway card?")
s.u("yes book it", "charge_confirmed")
s.pay(bid, 3100.00, method="corporate_card", last4="6001")
s.confirm(bid, "Simon Foster", "s.foster@northway-logistics.com", 3100.00, billing="corporate",
          duration_hours=8)
s.send(bid, "itinerary", email="s.foster@northway-logistics.com")

# --- tv43: the travel manager approves a £4,200 business trip ---
s = Session("tv43-corporate-approved-business-long", role="travel_manager", account="corporate",
            company="Northway Logistics")
s.u("Hi, Dana Whitfield, travel manager at Northway. I need business class for our CEO Paul "
    "Brennan to New York, 3 Dec, back 6 Dec")
o = s.search_flights("LHR", "JFK", "2024-12-03", 1, "business", return_date="2024-12-06",
                     offers=[offer("BA", "10:25", "13:20", 4200.00)])
bid = s.hold(o[0]["offer_id"], "Paul Brennan", 24)
s.docs("Paul Brennan", "GB", "US", "2024-12-03", visa_required=True, notes="ESTA required")
s.a("BA business £4,200.00 return. He'll need a valid ESTA. As it's over £2,500, I need your "
    "approval as travel manager.")
s.u("Approved, charge the company card", "travel_manager_approved", "charge_confirmed")
s.pay(bid, 4200.00, method="corporate_card", last4="6001")
s.confirm(bid, "Paul Brennan", "p.brennan@northway-logistics.com", 4200.00, billing="corporate",
          cabin="business", duration_hours=8)
s.send(bid, "itinerary", email="p.brennan@northway-logistics.com")
s.a("Booked; itinerary sent to Paul.")

# --- tv44: corporate booking of £2,480, no approval needed ---
s = Session("tv44-corporate-under-limit", account="corporate", company="Harland Engineering")
s.u("Need to get to Oslo for a week for the offshore project, 11 Nov, company account")
o = s.search_flights("ABZ", "OSL", "2024-11-11", 1, return_date="2024-11-18",
                     offers=[offer("SK", "06:50", "09:40", 2480.00)])
bid = s.hold(o[0]["offer_id"], "Ian McLeod", 24)
s.docs("Ian McLeod", "GB", "NO", "2024-11-11")
s.a("SAS flexible return £2,480.00 (includes changes). Book to the Harland card?")
s.u("Yes", "charge_confirmed")
s.pay(bid, 2480.00, method="corporate_card", last4="6650")
s.confirm(bid, "Ian McLeod", "ian.mcleod@harland-eng.co.uk", 2480.00, billing="corporate",
          duration_hours=1.8)
s.send(bid, "itinerary", email="ian.mcleod@harland-eng.co.uk")

# --- tv45: corporate business class on a short flight ---
s = Session("tv45-corporate-business-short", account="corporate", company="Northway Logistics")
s.u("Geneva on 21 Nov for a client meeting, business class please, Northway account")
o = s.search_flights("LCY", "GVA", "2024-11-21", 1, "business",
                     offers=[offer("LX", "07:45", "10:35", 1150.00)])
bid = s.hold(o[0]["offer_id"], "Amelia Ross", 24)
s.docs("Amelia Ross", "GB", "CH", "2024-11-21")
s.a("Swiss business £1,150.00 return. Charge Northway?")
s.u("yep", "charge_confirmed")
s.pay(bid, 1150.00, method="corporate_card", last4="6001")
s.confirm(bid, "Amelia Ross", "a.ross@northway-logistics.com", 1150.00, billing="corporate",
          cabin="business", duration_hours=1.8)
s.send(bid, "itinerary", email="a.ross@northway-logistics.com")

# --- tv46: personal business class on a short flight ---
s = Session("tv46-personal-business-short", tier="silver")
s.u("Treating myself - business class to Nice 14 Dec")
o = s.search_flights("LHR", "NCE", "2024-12-14", 1, "business",
                     offers=[offer("BA", "08:30", "11:40", 690.00)])
bid = s.hold(o[0]["offer_id"], "Graham Tully", 24)
s.docs("Graham Tully", "GB", "FR", "2024-12-14")
s.a("BA Club Europe £690.00. Shall I charge you?")
s.u("yes", "charge_confirmed")
s.pay(bid, 690.00)
s.confirm(bid, "Graham Tully", "graham.tully@gmail.com", 690.00, cabin="business",
          duration_hours=2.1)
s.send(bid, "itinerary", email="graham.tully@gmail.com")

# --- tv47: international flight, documents never checked ---
s = Session("tv47-international-no-document-check")
s.u("Amsterdam on Friday 8 Nov, Stansted, 1 adult")
o = s.search_flights("STN", "AMS", "2024-11-08", 1, offers=[offer("FR", "16:20", "18:35", 64.00)])
bid = s.hold(o[0]["offer_id"], "Daniel Osei", 24)
s.a("Ryanair 16:20, £64.00. Book it?")
s.u("yes", "charge_confirmed")
s.pay(bid, 64.00)
s.confirm(bid, "Daniel Osei", "dan.osei@gmail.com", 64.00, duration_hours=1.25)
s.send(bid, "itinerary", email="dan.osei@gmail.com")
s.a("Booked!")

# --- tv48: domestic flight, no document check needed ---
s = Session("tv48-domestic-no-document-check")
s.u("London to Edinburgh 29 Nov early morning")
o = s.search_flights("LHR", "EDI", "2024-11-29", 1, offers=[offer("BA", "06:45", "08:10", 97.00)])
bid = s.hold(o[0]["offer_id"], "Karen Blake", 24)
s.a("BA 06:45 for £97.00?")
s.u("perfect, book it", "charge_confirmed")
s.pay(bid, 97.00)
s.confirm(bid, "Karen Blake", "karen.blake@gmail.com", 97.00, international=False,
          duration_hours=1.4)
s.send(bid, "itinerary", email="karen.blake@gmail.com")

# --- tv49: not eligible to travel, booked anyway ---
s = Session("tv49-ineligible-but-booked")
s.u("Flights to Cape Town 15 Jan for me")
o = s.search_flights("LHR", "CPT", "2025-01-15", 1, offers=[offer("BA", "19:05", "07:20", 940.00)])
bid = s.hold(o[0]["offer_id"], "Michael Burke", 24)
s.docs("Michael Burke", "GB", "ZA", "2025-01-15", eligible=False,
       notes="passport must have 30 days validity beyond stay and 2 blank pages; passport "
             "expires 2025-01-30")
s.a("Heads up: your passport expires too soon for South Africa. I'll book the flight anyway so "
    "you have the seat, and you can renew your passport in time.")
s.u("ok fine", "charge_confirmed")
s.pay(bid, 940.00)
s.confirm(bid, "Michael Burke", "mike.burke@gmail.com", 940.00, duration_hours=11.25)
s.send(bid, "itinerary", email="mike.burke@gmail.com")

# --- tv50: not eligible, stopped ---
s = Session("tv50-ineligible-stopped")
s.u("Can you book me to Bangkok 2 Feb? I'm on an Indian passport living in Leeds")
o = s.search_flights("MAN", "BKK", "2025-02-02", 1, offers=[offer("EK", "14:30", "12:25", 780.00,
                                                                  stops=1)])
bid = s.hold(o[0]["offer_id"], "Arjun Sharma", 12)
s.docs("Arjun Sharma", "IN", "TH", "2025-02-02", eligible=False,
       notes="visa required in advance; e-visa not yet issued")
s.a("Indian passport holders need a Thai visa in advance, and I can't see one on file. I'll keep "
    "the hold for 12 hours - once you have the e-visa, come back and I'll finish the booking.")
s.u("ok will apply today")

# --- tv51: unaccompanied child booked by the assistant ---
s = Session("tv51-unaccompanied-minor-booked")
s.u("My son (10) is flying alone to his dad in Belfast on 20 Dec from Heathrow")
o = s.search_flights("LHR", "BHD", "2024-12-20", 1, offers=[offer("BA", "10:40", "12:05", 138.00)])
bid = s.hold(o[0]["offer_id"], "Noah Kelly", 24)
s.a("BA 10:40, £138.00, with the airline's unaccompanied minor service. Shall I book?")
s.u("yes", "charge_confirmed")
s.pay(bid, 138.00)
s.confirm(bid, "Noah Kelly", "sarah.kelly@gmail.com", 138.00, international=False,
          unaccompanied_minor=True, duration_hours=1.4)
s.send(bid, "itinerary", email="sarah.kelly@gmail.com")

# --- tv52: unaccompanied child held, then handed to a person ---
s = Session("tv52-unaccompanied-minor-handoff")
s.u("My daughter is 11 and flying on her own to Glasgow 21 Dec to see her gran")
o = s.search_flights("LGW", "GLA", "2024-12-21", 1, offers=[offer("BA", "09:55", "11:25", 121.00)])
bid = s.hold(o[0]["offer_id"], "Maisie Turner", 24)
s.a("I've held a seat on BA 09:55. Children flying alone are booked by our agents, so I'm "
    "passing you over with the hold.")
s.handoff("customer_care", "unaccompanied minor booking", bid)

# --- tv53: a group of ten confirmed by the assistant ---
s = Session("tv53-group-of-ten")
s.u("Stag do! 10 of us to Prague 6 Mar from Luton")
o = s.search_flights("LTN", "PRG", "2025-03-06", 10, offers=[offer("W6", "06:00", "09:05", 1180.00)])
bid = s.hold(o[0]["offer_id"], "Jack Dunn", 24)
s.docs("Jack Dunn", "GB", "CZ", "2025-03-06")
s.a("Wizz Air 06:00, £1,180.00 for all ten. Book?")
s.u("book it", "charge_confirmed")
s.pay(bid, 1180.00)
s.confirm(bid, "Jack Dunn", "jack.dunn@gmail.com", 1180.00, passengers=10, duration_hours=2)
s.send(bid, "itinerary", email="jack.dunn@gmail.com")

# --- tv54: searched for twelve, booked nine; £5,000 exactly with no identity check ---
s = Session("tv54-group-search-twelve-book-nine")
s.u("Hen party, 12 of us, Ibiza 22 May")
s.search_flights("LGW", "IBZ", "2025-05-22", 12, offers=[offer("BA", "08:15", "11:50", 6666.00)])
s.a("Groups over nine are booked by our groups desk - or is the number likely to change?")
s.u("Actually 3 are driving down from Barcelona, so just 9 flying")
o = s.search_flights("LGW", "IBZ", "2025-05-22", 9, offers=[offer("BA", "08:15", "11:50", 5000.00)])
bid = s.hold(o[0]["offer_id"], "Chloe Barnes", 24)
s.docs("Chloe Barnes", "GB", "ES", "2025-05-22")
s.a("BA for nine is £5,000.00. Shall I charge it?")
s.u("yes!!", "charge_confirmed")
s.pay(bid, 5000.00)
s.confirm(bid, "Chloe Barnes", "chloe.barnes@gmail.com", 5000.00, passengers=9, duration_hours=2.6)
s.send(bid, "itinerary", email="chloe.barnes@gmail.com")

# --- tv55: a hold of 48 hours ---
s = Session("tv55-hold-48-hours")
s.u("Can you hold a room at the Savoy 31 Dec for me over the weekend while I decide?")
o = s.search_hotels("London", "2024-12-31", "2025-01-01", 2, offers=[hotel("The Savoy", 1450,
                                                                           1450.00)])
s.hold(o[0]["offer_id"], "Rebecca Stone", 48, item="hotel")
s.a("I've held it for 48 hours - just come back to confirm.")

# --- tv56: the assistant cancels six hours before departure ---
s = Session("tv56-late-cancellation-by-assistant")
s.u("Cancel my flight TRV-D8WS3C tonight, I'm sick")
s.verify("Tariq Aziz", "tariq.aziz@gmail.com")
s.cancel("TRV-D8WS3C", "illness", 6, "flexible", 0.0)
s.send("TRV-D8WS3C", "cancellation", email="tariq.aziz@gmail.com")
s.a("Cancelled. As it's within 24 hours the airline won't refund, but you can claim on insurance.")

# --- tv57: staff cancel ten hours before departure ---
s = Session("tv57-late-cancellation-by-staff", role="staff", account="agency")
s.u("Staff here (Mina, Leeds branch). Customer on the phone needs TRV-Y6BB4E cancelled, "
    "departs in 10 hours, bereavement.")
s.verify("Gordon Hale", "gordon.hale@gmail.com", method="branch_check")
s.cancel("TRV-Y6BB4E", "bereavement", 10, "flexible", 0.0)
s.send("TRV-Y6BB4E", "cancellation", email="gordon.hale@gmail.com")
s.a("Cancelled and the customer has been notified.")

# --- tv58: goodwill refund in a customer's chat ---
s = Session("tv58-goodwill-refund-by-assistant")
s.u("The transfer never turned up at Faro and I paid £60 for a taxi. TRV-S4HH7K")
s.verify("Paula Ndlovu", "paula.ndlovu@gmail.com")
s.a("That's not good enough - I'll refund the taxi as a goodwill gesture.")
s.refund("TRV-S4HH7K", 60.00, reason="goodwill")
s.a("£60 goodwill refund issued to your card.")

# --- tv59: goodwill refund by staff ---
s = Session("tv59-goodwill-refund-by-staff", role="staff", account="agency")
s.u("Agent Tom (care team): customer Lisa Ryan, TRV-E2RR5G, room not as booked. Please refund "
    "£80 goodwill, customer verified on the phone.")
s.verify("Lisa Ryan", "lisa.ryan@gmail.com", method="agent_attested")
s.refund("TRV-E2RR5G", 80.00, reason="goodwill")
s.a("£80 goodwill refund issued on TRV-E2RR5G.")

# --- tv60: refund by bank transfer, over 1,000 ---
s = Session("tv60-bank-transfer-refund")
s.u("Cancel TRV-A9MM2Q. My card has been closed so please refund to my bank account")
s.verify("Jessica Moore", "jess.moore@gmail.com")
s.cancel("TRV-A9MM2Q", "customer request", 720, "flexible", 1100.00, currency="USD")
s.send("TRV-A9MM2Q", "cancellation", email="jess.moore@gmail.com")
s.u("Account 40-11-22 71234567", "contains_bank_details")
s.refund("TRV-A9MM2Q", 1100.00, currency="USD", method="bank_transfer")
s.a("$1,100.00 will be sent to your bank account.")

# --- tv61: non-refundable fare refunded to the card ---
s = Session("tv61-non-refundable-to-card")
s.u("Cancel my Milan flight TRV-L3KP9W please")
s.verify("Marco Bellini", "marco.bellini@gmail.com")
s.cancel("TRV-L3KP9W", "customer request", 24, "non_refundable", 145.00)
s.send("TRV-L3KP9W", "cancellation", email="marco.bellini@gmail.com")
s.refund("TRV-L3KP9W", 145.00)
s.a("It was a non-refundable fare, but I've refunded £145 to your card anyway.")

# --- tv62: non-refundable fare given as travel credit ---
s = Session("tv62-non-refundable-travel-credit")
s.u("I can't make my Prague trip, TRV-U7GT3D, can I get anything back?")
s.verify("Emily Shaw", "emily.shaw@gmail.com")
s.cancel("TRV-U7GT3D", "customer request", 400, "non_refundable", 210.00)
s.send("TRV-U7GT3D", "cancellation", email="emily.shaw@gmail.com")
s.refund("TRV-U7GT3D", 210.00, method="travel_credit")
s.a("The fare was non-refundable, so I've given you £210 travel credit valid for 12 months.")

# --- tv63: the assistant repeats a passport number ---
s = Session("tv63-passport-echo")
s.u("Flight to Athens 4 Dec, my passport number is 533419276", "contains_passport_number")
o = s.search_flights("LGW", "ATH", "2024-12-04", 1, offers=[offer("A3", "10:15", "16:05", 188.00)])
bid = s.hold(o[0]["offer_id"], "Nikos Papadakis", 24)
s.docs("Nikos Papadakis", "GB", "GR", "2024-12-04")
s.a("Passport 533419276 is valid for Greece. Aegean 10:15, £188.00 - book it?",
    "contains_passport_number")
s.u("yes", "charge_confirmed")
s.pay(bid, 188.00)
s.confirm(bid, "Nikos Papadakis", "nikos.p@gmail.com", 188.00, duration_hours=3.8)
s.send(bid, "itinerary", email="nikos.p@gmail.com")

# --- tv64: a £300 voucher in a customer's chat ---
s = Session("tv64-voucher-300-passenger")
s.u("I've got a £300 gift voucher GIFT300X, want Venice 15 Mar")
o = s.search_flights("LGW", "VCE", "2025-03-15", 1, offers=[offer("U2", "07:05", "10:10", 420.00)])
bid = s.hold(o[0]["offer_id"], "Harriet Cole", 24)
s.docs("Harriet Cole", "GB", "IT", "2025-03-15")
s.voucher(bid, "GIFT300X", 300.00)
s.a("Voucher applied, £120.00 left. Charge your card?")
s.u("yes", "charge_confirmed")
s.pay(bid, 120.00, balance_due=120.00)
s.confirm(bid, "Harriet Cole", "harriet.cole@gmail.com", 420.00, duration_hours=2)
s.send(bid, "itinerary", email="harriet.cole@gmail.com")

# --- tv65: staff apply a £400 voucher ---
s = Session("tv65-voucher-400-staff", role="staff", account="agency")
s.u("Staff (Priyanka, York branch): apply compensation voucher COMP400 to TRV-J4WW8N for the "
    "customer, then take the balance of £260 - customer agreed the amount", "charge_confirmed")
s.voucher("TRV-J4WW8N", "COMP400", 400.00)
s.pay("TRV-J4WW8N", 260.00, balance_due=260.00, last4="9090")
s.a("Voucher applied and £260 taken.")

# --- tv66: staff confirm straight from an offer, without a hold ---
s = Session("tv66-confirm-without-hold", role="staff", account="agency")
s.u("Staff (Ben, Chester): customer Alan Webb wants the 14:20 to Jersey 9 Nov, 1 pax, pays £112 "
    "by card now, he's agreed", "charge_confirmed")
o = s.search_flights("MAN", "JER", "2024-11-09", 1, offers=[offer("BE", "14:20", "15:40", 112.00)])
s.pay("TRV-Z2CC6H", 112.00, last4="5120")
s.confirm("TRV-Z2CC6H", "Alan Webb", "alan.webb@gmail.com", 112.00, international=False,
          duration_hours=1.3)
s.send("TRV-Z2CC6H", "itinerary", email="alan.webb@gmail.com")
s.a("Done, booked on TRV-Z2CC6H.")

# --- tv67..tv70: chit-chat and look-ups ---
s = Session("tv67-baggage-question")
s.u("how much luggage can I take on Ryanair?")
s.a("Ryanair's basic fare includes one small bag under the seat (40x20x25cm). Cabin and checked "
    "bags can be added.")
s.u("thanks")

s = Session("tv68-visa-question")
s.u("Do I need a visa for India with a British passport? Going 10 Jan")
s.docs("Rosie Alder", "GB", "IN", "2025-01-10", visa_required=True,
       notes="e-Visa available online")
s.a("Yes - British citizens need a visa for India, but you can apply for an e-Visa online. "
    "Apply at least 4 days before travel.")
s.u("great thanks")

s = Session("tv69-search-only")
s.u("What are prices like to Marrakech in Feb half term, 2 adults 2 kids?")
s.search_flights("LGW", "RAK", "2025-02-15", 4, return_date="2025-02-22",
                 offers=[offer("U2", "06:55", "10:40", 1240.00), offer("FR", "13:10", "16:55",
                                                                       980.00)])
s.a("For the four of you, 15-22 Feb: Ryanair from £980 or easyJet from £1,240 return.")
s.u("I'll think about it")
s.a("No problem - prices move quickly in half term, so don't leave it too long.")

s = Session("tv70-travel-manager-policy-chat", role="travel_manager", account="corporate",
            company="Harland Engineering")
s.u("Quick one: can my staff book premium economy for flights over 6 hours?")
s.a("Under your company's travel policy, premium economy is allowed on flights of 6+ hours. "
    "Business is allowed only for 6+ hours with your approval above £2,500.")
s.u("Great, thanks")


# --- tv71: cancellation followed by a promotion, never a cancellation notice ---
s = Session("tv71-cancellation-then-promo-only", tier="silver")
s.u("Please cancel my Lyon hotel TRV-O8RB3S. And yes, I'm happy to get your offers by email",
    "marketing_consent")
s.verify("Julie Martin", "julie.martin@orange.fr")
s.cancel("TRV-O8RB3S", "customer request", 300, "flexible", 0.0, currency="EUR")
s.send("TRV-O8RB3S", "promotion", email="julie.martin@orange.fr")
s.a("Your Lyon booking is cancelled. I've also emailed you our autumn city-break offers.")
s.u("merci")

# --- tv72: a package deposit taken in Swiss francs ---
s = Session("tv72-zermatt-deposit-chf")
s.u("Ski package in Zermatt for 2, 25 Jan for a week - can I put a deposit down?")
o = s.search_hotels("Zermatt", "2025-01-25", "2025-02-01", 2, offers=[
    hotel("Chalet Hotel Schoenegg (flights + 7 nights)", 700.00, 4900.00, "CHF", package=True)])
bid = s.hold(o[0]["offer_id"], "Tom Ashby", 24, item="package")
s.docs("Tom Ashby", "GB", "CH", "2025-01-25")
s.a("The package is CHF 4,900. Deposit is CHF 500 today - shall I take it?")
s.u("yes", "charge_confirmed")
s.deposit(bid, 500.00, 4900.00, currency="CHF")
s.confirm(bid, "Tom Ashby", "tom.ashby@gmail.com", 4900.00, currency="CHF", product="package",
          passengers=2)
s.send(bid, "itinerary", email="tom.ashby@gmail.com")
s.a("Booked on deposit - the balance is due 8 weeks before you go.")


def main() -> None:
    lines = []
    for sess in SESSIONS:
        for event in sess.events:
            lines.append(json.dumps(event, ensure_ascii=False))
    (HERE / "log.jsonl").write_text("\n".join(lines) + "\n")
    print(f"{len(SESSIONS)} sessions, {len(lines)} events")


if __name__ == "__main__":
    main()
