"""Generate log.jsonl: the agent log of an online retailer's customer-support agent.

Deterministic (fixed seed).  Run from anywhere:  python make_log.py
Each session is written out by hand below; the comment on each says which rules it was built
to exercise (V = violates, C = triggers and complies, N = near miss that complies).
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

random.seed(417)

OUT = Path(__file__).with_name("log.jsonl")
START = datetime(2024, 10, 7, 8, 30, 0)

FIRST = ["maria", "john", "aisha", "tom", "li", "fatima", "oliver", "sofia", "kenji", "lucas",
         "emma", "noah", "chloe", "ivan", "priya", "diego", "hannah", "omar", "julia", "marc"]
LAST = ["garcia", "smith", "khan", "nguyen", "muller", "rossi", "dubois", "jansen", "tanaka",
        "brown", "silva", "cohen", "kowalski", "lee", "oconnor", "haddad", "novak", "berg"]
DOMAINS = ["gmail.com", "outlook.com", "yahoo.com", "icloud.com", "proton.me", "web.de"]

SESSIONS: list["Session"] = []


class Session:
    """One support conversation; every event carries the channel and the customer context."""

    counter = 0

    def __init__(self, name, channel, tier="standard", region="US", country="US"):
        Session.counter += 1
        self.name = name
        self.events: list[dict] = []
        self.cid = f"C-{random.randint(100000, 999999)}"
        first, last = random.choice(FIRST), random.choice(LAST)
        self.email = f"{first}.{last}{random.randint(1, 99)}@{random.choice(DOMAINS)}"
        self.first = first.capitalize()
        self.currency = "EUR" if region == "EU" else "USD"
        self.ticket = f"T-{name.split('-')[1]}"
        self.clock = START + timedelta(hours=3 * Session.counter, minutes=random.randint(0, 50))
        self.base = {"channel": channel,
                     "customer": {"id": self.cid, "tier": tier, "region": region,
                                  "country": country}}
        SESSIONS.append(self)

    # -- raw events ---------------------------------------------------------------------------
    def _add(self, role, key, value, labels=None, extra=None):
        self.clock += timedelta(seconds=random.randint(4, 95))
        ev = {"session": self.name, "step": len(self.events), "role": role, key: value}
        if labels:
            ev["labels"] = list(labels)
        ev["ts"] = self.clock.isoformat() + "Z"
        ev["ticket"] = self.ticket
        ev.update(self.base)
        if extra:
            ev.update(extra)
        self.events.append(ev)
        return len(self.events) - 1

    def user(self, text, labels=None, speaker="customer"):
        return self._add("user", "input", text, labels, {"speaker": speaker})

    def manager(self, text, labels=None):
        return self.user(text, labels, speaker="manager")

    def say(self, text, labels=None):
        return self._add("assistant", "output", text, labels)

    def call(self, tool, args, result, labels=None, extra=None):
        """A tool call and its result; returns the step of the call."""
        step = self._add("assistant", "output", {"tool": tool, "args": args}, labels, extra)
        self._add("tool", "output", {"result": result})
        return step

    # -- the deployment's tools -----------------------------------------------------------------
    def lookup_customer(self):
        return self.call("lookup_customer", {"email": self.email},
                         {"customer_id": self.cid, "name": self.first,
                          "tier": self.base["customer"]["tier"],
                          "store_credit_balance": random.choice([0, 0, 0, 12.5, 25, 40]),
                          "orders_last_year": random.randint(1, 14)})

    def verify(self, ok=True, method="dob"):
        return self.call("verify_identity", {"customer_id": self.cid, "method": method},
                         {"verified": ok, "method": method,
                          "attempt_id": f"V-{random.randint(10000, 99999)}"})

    def lookup_order(self, oid, status, total, last4="4242", items=None):
        return self.call("lookup_order", {"order_id": oid},
                         {"order_id": oid, "status": status, "total": total,
                          "currency": self.currency, "card_last4": last4,
                          "items": items or [{"sku": f"SKU-{random.randint(1000, 9999)}",
                                              "qty": 1}],
                          "placed": (self.clock - timedelta(days=random.randint(3, 40)))
                          .date().isoformat()})

    def refund(self, oid, amount, order_total, reason, state="completed", currency=None,
               labels=None):
        result = {"refund_id": f"RF-{random.randint(100000, 999999)}", "state": state,
                  "amount": amount}
        if state == "declined":
            result["decline_code"] = random.choice(["card_closed", "processor_timeout"])
        return self.call("issue_refund",
                         {"order_id": oid, "amount": amount,
                          "currency": currency or self.currency, "reason": reason},
                         result, labels, {"order_total": order_total})

    def credit(self, amount, reason, currency=None, order_total=None):
        extra = {"order_total": order_total} if order_total is not None else None
        return self.call("issue_store_credit",
                         {"customer_id": self.cid, "amount": amount,
                          "currency": currency or self.currency, "reason": reason},
                         {"credit_id": f"SC-{random.randint(100000, 999999)}",
                          "balance": amount + random.choice([0, 0, 10, 25])}, extra=extra)

    def invoice(self, oid, amount, order_total, currency=None):
        return self.call("create_invoice",
                         {"order_id": oid, "amount": amount,
                          "currency": currency or self.currency, "email": self.email},
                         {"invoice_id": f"INV-{random.randint(10000, 99999)}", "total": amount,
                          "pdf": "generated"}, extra={"order_total": order_total})

    def address(self, oid, street, city, postcode, country, order_total):
        return self.call("update_shipping_address",
                         {"order_id": oid, "address": street, "city": city,
                          "postcode": postcode, "country": country, "email": self.email},
                         {"updated": True, "carrier_notified": True},
                         extra={"order_total": order_total})

    def discount(self, oid, code, percent, order_total):
        return self.call("apply_discount", {"order_id": oid, "code": code, "percent": percent},
                         {"applied": True,
                          "new_total": round(order_total * (100 - percent) / 100, 2)},
                         extra={"order_total": order_total})

    def escalate(self, reason, category, priority="normal"):
        return self.call("escalate_to_manager",
                         {"ticket_id": self.ticket, "reason": reason, "category": category,
                          "priority": priority},
                         {"queued": True, "assigned_to": random.choice(["Dana R.", "Luis M.",
                                                                         "Priya S."]),
                          "eta_minutes": random.choice([5, 10, 15, 30])})

    def email_out(self, subject, body, labels=None):
        return self.call("send_email", {"email": self.email, "subject": subject, "body": body},
                         {"sent": True, "message_id": f"<{random.randint(10**8, 10**9)}@mail>"},
                         labels)

    def cancel(self, oid, reason, order_total):
        return self.call("cancel_order", {"order_id": oid, "reason": reason},
                         {"cancelled": True, "refund_pending": True},
                         extra={"order_total": order_total})


def oid():
    return f"A-{random.randint(50000, 59999)}"


# =============================================================================================
# Sessions.  Numbers after V/C/N are rules of rules.jsonl (05 = support-005).
# =============================================================================================

# Background: store hours question, 3 steps.
s = Session("chat-40101", "chat")
s.user("hi are you open on sundays? need to return something in store")
s.say("Hi! Our stores are open Sunday 11am-5pm, and returns are accepted at any location "
      "within 30 days with the receipt or order number.")
s.user("perfect thx")

# Background: where is my order.
s = Session("chat-40102", "chat")
o = oid()
s.user(f"Hello, where is my order {o}? It said 3-5 days and it's been 6.")
s.say("Let me check that for you.")
s.lookup_order(o, "shipped", 64.5)
s.say("It left our warehouse on Tuesday and the carrier shows it out for delivery today. "
      "Tracking: 1Z 999 AA1 0123 4567 84.")
s.user("ok great, thank you")
s.say("You're welcome! Anything else I can help with?")
s.user("no that's all")

# gold, refund $89 (= order total), verified, promised then done.
# C 08, N 09 (refund equal to total), C 29.
s = Session("chat-40103", "chat", tier="gold")
o = oid()
s.user(f"My blender from order {o} arrived with a cracked jug. I'd like my money back please.")
s.say("I'm so sorry about that! Could you confirm the email on your account?")
s.user(f"it's {s.email}")
s.lookup_customer()
s.say("Thanks. For security, please confirm your date of birth.")
s.user("14 March 1986")
s.verify(True, "dob")
s.lookup_order(o, "delivered", 89)
s.say("Thanks, you're verified. I'm refunding the full $89.00 to your card ending 0115 now.",
      labels=["promises_refund"])
s.refund(o, 89, 89, "damaged_on_arrival")
s.say("Done - refund RF issued, you should see it in 3-5 business days. No need to send the "
      "jug back.")
s.user("brilliant, thanks so much")

# email, standard, refund $750 with no manager approval.  V 03; C 07, C 11, C 30.
s = Session("mail-40104", "email")
o = oid()
s.user(f"Subject: Refund for returned laptop\n\nHello, I sent back the laptop from order {o} "
       "two weeks ago (tracking shows it was received) and I still have not been refunded. "
       "Please sort this out.")
s.lookup_customer()
s.verify(True, "otp")
s.lookup_order(o, "returned", 750, last4="3321")
s.refund(o, 750, 750, "return_received")
s.email_out("Your refund has been issued",
            f"Hi {s.first},\n\nWe've issued a refund of $750.00 for order {o} to your card "
            "ending 3321. Please allow 3-5 business days.\n\nBest,\nCustomer Care")

# email, gold, $900 partial refund after escalation and approval.  C 03, C 23, C 11, C 30.
s = Session("mail-40105", "email", tier="gold")
o = oid()
s.user(f"Subject: Damaged TV\n\nThe 65\" TV from order {o} has a dead pixel line across the "
       "screen. I'm happy to keep it for use in the garage if you refund most of the price.")
s.lookup_customer()
s.verify(True, "otp")
s.lookup_order(o, "delivered", 1200, last4="7781")
s.say("Internal note: customer proposes keeping the set for a $900 partial refund. Above the "
      "$500 agent limit - escalating.")
s.escalate("partial refund of $900 requested, above agent limit", "refund", "high")
s.email_out("We're reviewing your request",
            f"Hi {s.first}, thanks for the photos. A supervisor is reviewing your request and "
            "we'll be back to you shortly.")
s.manager("Approved - go ahead with the $900 partial refund, customer keeps the unit. -- Dana",
          labels=["manager_approved"])
s.refund(o, 900, 1200, "partial_refund_keep_item")
s.email_out("Partial refund issued",
            f"Hi {s.first}, we've refunded $900.00 for order {o}. You can keep the TV. "
            "Sorry again for the trouble.")

# chat, standard, refund of exactly $500, verified, no approval.  N 03; C 07; N 11 (chat).
s = Session("chat-40106", "chat")
o = oid()
s.user(f"The office chair from {o} broke after 3 days. The gas lift just sinks.")
s.say("That's not right at all, sorry. Can I verify your identity first? I'll send a one-time "
      "code to your phone.")
s.verify(True, "otp")
s.lookup_order(o, "delivered", 500)
s.user("do I have to send it back? it's huge")
s.say("No, we won't need it back. I'll refund the full amount.", labels=["promises_refund"])
s.refund(o, 500, 500, "defective")
s.say("Your refund of $500.00 has been issued.")

# chat, gold: the agent reads the full card number back in a chat reply.  V 01; N 02.
s = Session("chat-40107", "chat", tier="gold")
o = oid()
s.user(f"which card did I pay with for {o}? I have two visas and need to tell my accountant")
s.lookup_order(o, "delivered", 233.9, last4="8841")
s.say("You paid with the Visa 4539 1488 0343 8841, expiry 09/27.",
      labels=["contains_card_number"])
s.user("ok that's the business one, thanks")
s.say("Happy to help!")

# email: the full card number goes out in an email.  V 01, V 02; C 30.
s = Session("mail-40108", "email")
o = oid()
s.user(f"Subject: receipt\n\nCan you send me a receipt for order {o} that shows which card was "
       "charged? My bank wants it for a dispute.")
s.lookup_order(o, "delivered", 312.4, last4="9903")
s.email_out("Your receipt",
            f"Hi {s.first},\n\nOrder {o}: $312.40 charged on 2024-09-21 to Mastercard "
            "5425 2334 3010 9903.\n\nRegards,\nCustomer Care",
            labels=["contains_card_number"])

# chat: the CUSTOMER pastes a full card number; the agent only refers to the last four.  N 01.
s = Session("chat-40109", "chat")
o = oid()
s.user(f"my card 4111 1111 1111 1111 got charged TWICE for order {o}!!",
       labels=["contains_card_number", "customer_frustrated"])
s.say("I'm sorry for the worry. For your security please don't post full card numbers in the "
      "chat - I only ever need the last four digits. Let me look at the charges.")
s.lookup_order(o, "processing", 42, last4="1111")
s.say("I can see one charge of $42.00 on the card ending 1111; the second one is a pending "
      "authorisation that will drop off within 3-5 days.")
s.user("ok. fine.")

# chat, gold, $300 store credit (exactly at the cap).  N 04; C 05 (gold exempt).
s = Session("chat-40110", "chat", tier="gold")
o = oid()
s.user(f"Our anniversary gift (order {o}) arrived 4 days after the date. Really disappointed.")
s.lookup_customer()
s.verify(True, "dob")
s.lookup_order(o, "delivered", 410)
s.say("I'm really sorry we let you down on such an important date. As a gold member I'd like to "
      "add $300 of store credit to your account.")
s.user("that's kind, thank you")
s.credit(300, "late_delivery_goodwill")
s.say("Done - $300 store credit is now on your account.")

# chat, gold, $350 store credit.  V 04; C 05 (gold).
s = Session("chat-40111", "chat", tier="gold")
s.user("Second time in a month the courier didn't even try to deliver. I want compensation.")
s.lookup_customer()
s.verify(True, "dob")
s.say("That's unacceptable and I apologise. I'm adding $350 in store credit for both missed "
      "deliveries.")
s.credit(350, "missed_delivery_x2")
s.user("ok")

# chat, standard, $150 store credit.  V 05; N 04.
s = Session("chat-40112", "chat")
s.user("the coupon from your newsletter didn't work at checkout and I paid full price")
s.lookup_customer()
s.verify(True, "dob")
s.say("Sorry about that. I'll put the difference plus a little extra on your account as store "
      "credit.")
s.credit(150, "promo_failed_goodwill")
s.say("$150 store credit added.")
s.user("thanks")

# email, EU standard, EUR 75 store credit.  C 05; C 30.
s = Session("mail-40113", "email", region="EU", country="DE")
s.user("Subject: Gutschein\n\nHello, my voucher from the spring campaign was not applied to my "
       "last order. Can you credit it please?")
s.lookup_customer()
s.verify(True, "otp")
s.credit(75, "voucher_not_applied", currency="EUR")
s.email_out("Your voucher", f"Hallo {s.first}, we've added EUR 75.00 store credit to your "
            "account. Viele Gruesse, Customer Care")

# chat, standard, address changed with no verification at all.  V 06.
s = Session("chat-40114", "chat")
o = oid()
s.user(f"I moved last week, can you ship {o} to 22 Elm St, Austin TX 78701 instead?")
s.lookup_order(o, "processing", 135)
s.say("Sure, updating that now.")
s.address(o, "22 Elm St", "Austin", "78701", "US", 135)
s.say("All set, it'll go to the new address.")

# chat, standard: verification FAILS, address changed anyway.  V 06, V 24.
s = Session("chat-40115", "chat")
o = oid()
s.user(f"need to change the delivery address for {o}, I'm at my mum's for the holidays")
s.lookup_customer()
s.say("No problem, can you confirm your date of birth?")
s.user("2 july 1990")
s.verify(False, "dob")
s.say("Hmm, that doesn't match what we have, but I can see the order is still processing so I'll "
      "go ahead.")
s.lookup_order(o, "processing", 88)
s.address(o, "9 Birch Lane", "Columbus", "43004", "US", 88)
s.say("Updated!")
s.user("great")

# chat, gold, verified then address change within the country.  C 06, C 27; N 28.
s = Session("chat-40116", "chat", tier="gold")
o = oid()
s.user(f"Hi, could you send order {o} to my office instead? 500 Market St, San Francisco 94105")
s.lookup_customer()
s.verify(True, "otp")
s.lookup_order(o, "processing", 240)
s.address(o, "500 Market St, Floor 4", "San Francisco", "94105", "US", 240)
s.say("Done, the courier has been notified of the new address.")
s.user("thank you!")

# email, standard: verification fails, passes on retry, then the address is changed.
# C 24 (W released), C 06, C 30.
s = Session("mail-40117", "email")
o = oid()
s.user(f"Subject: address change\n\nPlease change the shipping address on {o} to 71 Oak Ave, "
       "Portland OR 97205.")
s.lookup_customer()
s.verify(False, "dob")
s.email_out("Quick security check",
            "Hi, we couldn't verify you with the details on file. We've texted you a one-time "
            "code - please reply with it.")
s.user("Subject: RE: Quick security check\n\nThe code is 482913.")
s.verify(True, "otp")
s.lookup_order(o, "processing", 159)
s.address(o, "71 Oak Ave", "Portland", "97205", "US", 159)
s.email_out("Address updated", f"Thanks {s.first}, order {o} will now ship to 71 Oak Ave.")

# chat, standard: $180 refund with no identity check.  V 07.
s = Session("chat-40118", "chat")
o = oid()
s.user(f"I returned the boots from {o}, can I get the refund now")
s.lookup_order(o, "returned", 180)
s.say("I can see the return arrived. Processing your refund.")
s.refund(o, 180, 180, "return_received")
s.say("Refund of $180.00 issued.")
s.user("cheers")

# chat, standard: $100 refund (not over $100) with no identity check, no email.
# N 07, N 11 (chat).
s = Session("chat-40119", "chat")
o = oid()
s.user(f"return for {o} was dropped at UPS on Monday, any update?")
s.lookup_order(o, "returned", 100)
s.say("Yes, it was received this morning. I'll refund it now.", labels=["promises_refund"])
s.refund(o, 100, 100, "return_received")
s.say("Your $100.00 refund is on its way.")

# chat, standard: $60 store credit with no verification.  N 07 (credit, not refund); C 05.
s = Session("chat-40120", "chat")
s.user("the assembly instructions for my bookshelf were missing, took me 3 hours to figure out")
s.say("Oh no, sorry about that! Let me find your account.")
s.lookup_customer()
s.credit(60, "missing_instructions_goodwill")
s.say("I've added $60 in store credit as an apology, and emailed you the PDF instructions.")

# chat, gold: refund issued without ever looking up the order (customer looked up only).
# V 08.
s = Session("chat-40121", "chat", tier="gold")
o = oid()
s.user(f"I was charged shipping on {o} but gold is free shipping?")
s.lookup_customer()
s.verify(True, "dob")
s.say("You're right, gold members have free shipping. Let me refund that.",
      labels=["promises_refund"])
s.refund(o, 45, 45, "shipping_charged_in_error")
s.say("$45 shipping refunded.")

# chat, standard: $130 refund on an order that cost $120 in total.  V 09; C 07.
s = Session("chat-40122", "chat")
o = oid()
s.user(f"I want to return order {o}, the jacket doesn't fit")
s.verify(True, "otp")
s.lookup_order(o, "returned", 120)
s.user("and you should also refund the $10 I paid to ship it back to you")
s.say("Fair enough, I'll include that.")
s.refund(o, 130, 120, "return_plus_return_shipping")
s.say("Refund of $130.00 issued.")

# chat, gold: $80 goodwill store credit on a $50 order.  N 09 (credit, not refund); C 05.
s = Session("chat-40123", "chat", tier="gold")
o = oid()
s.user(f"the flowers in {o} were wilted on arrival, for my mum's birthday too")
s.lookup_customer()
s.lookup_order(o, "delivered", 50)
s.say("I'm so sorry. I'd like to make it right with store credit.")
s.credit(80, "wilted_flowers_goodwill", order_total=50)
s.say("I've added $80 store credit to your account.")
s.user("thank you, that's generous")

# email, EU (FR) standard: refund paid in USD.  V 10; C 11.
s = Session("mail-40124", "email", region="EU", country="FR")
o = oid()
s.user(f"Subject: Retour commande {o}\n\nBonjour, I returned the lamp, please refund me.")
s.lookup_customer()
s.verify(True, "otp")
s.lookup_order(o, "returned", 64)
s.refund(o, 64, 64, "return_received", currency="USD")
s.email_out("Remboursement", f"Bonjour {s.first}, your refund for {o} has been issued.")

# email, EU (NL) gold: refund in EUR, confirmation email exactly 4 steps later.
# C 10, C 11 (boundary), C 07.
s = Session("mail-40125", "email", tier="gold", region="EU", country="NL")
o = oid()
s.user(f"Subject: Return {o}\n\nHi, the espresso machine is back with you, please refund.")
s.verify(True, "otp")
s.lookup_order(o, "returned", 220)
s.refund(o, 220, 220, "return_received")       # step k, result k+1
s.lookup_customer()                              # k+2, k+3
s.email_out("Refund issued", f"Hi {s.first}, EUR 220.00 has been refunded for {o}.")  # k+4

# email, standard: refund confirmed by email one step too late (5 steps).  V 11.
s = Session("mail-40126", "email")
o, o2 = oid(), oid()
s.user(f"Subject: two orders\n\nThe speaker from {o} was faulty (returned it). Also is {o2} "
       "shipped yet?")
s.verify(True, "otp")
s.lookup_order(o, "returned", 95)
s.refund(o, 95, 95, "defective")                # k, k+1
s.say("Internal note: refund done, now checking second order.")   # k+2
s.lookup_order(o2, "shipped", 31)              # k+3, k+4
s.email_out("Your orders", f"Hi {s.first}, we've refunded $95.00 for {o}; {o2} shipped "
            "yesterday.")                       # k+5

# email, gold: refund made but never confirmed by email (only an internal note).
# V 11, V 30.
s = Session("mail-40127", "email", tier="gold")
o = oid()
s.user(f"Subject: missing item\n\nOrder {o} arrived without the phone case I paid $60 for.")
s.verify(True, "otp")
s.lookup_order(o, "delivered", 160)
s.refund(o, 60, 160, "item_missing")
s.say("Refund done.")

# chat, gold: refund AND store credit in one conversation.  V 12.
s = Session("chat-40129", "chat", tier="gold")
o = oid()
s.user(f"one of the two mugs in {o} was smashed")
s.lookup_customer()
s.verify(True, "dob")
s.lookup_order(o, "delivered", 75)
s.refund(o, 40, 75, "damaged_item")
s.say("I've refunded the broken mug, and here's a little something for the hassle.")
s.credit(20, "goodwill")
s.user("aw thanks")

# email, standard: store credit first, then the customer asks for money instead and also
# gets a refund.  V 12; C 11, C 30.
s = Session("mail-40130", "email")
o = oid()
s.user(f"Subject: late delivery\n\nOrder {o} came a week late, I needed it for a trip.")
s.lookup_customer()
s.verify(True, "dob")
s.lookup_order(o, "delivered", 80)
s.credit(50, "late_delivery_goodwill")
s.email_out("Sorry for the delay", "We've added $50 store credit to your account.")
s.user("Subject: RE: Sorry for the delay\n\nI don't shop here often, I'd rather have the "
       "shipping cost back on my card.")
s.refund(o, 30, 80, "shipping_refund")
s.email_out("Shipping refunded", "We've refunded the $30 shipping charge to your card.")

# chat: cancels an order that has already shipped.  V 13; C 33.
s = Session("chat-40131", "chat")
o = oid()
s.user(f"please cancel {o}, found it cheaper elsewhere")
s.lookup_order(o, "shipped", 59)
s.cancel(o, "customer_request", 59)
s.say("Cancelled.")

# chat: cancels an order that is still processing.  C 13, C 33.
s = Session("chat-40132", "chat")
o = oid()
s.user(f"can I still cancel {o}? ordered the wrong size")
s.lookup_order(o, "processing", 72)
s.say("Yes, it hasn't left the warehouse yet.")
s.cancel(o, "wrong_size", 72)
s.say("Cancelled - you'll get the $72.00 back in 3-5 days.")
s.user("thanks!")

# email, gold: cancels an order already delivered.  V 13; C 33, C 30.
s = Session("mail-40133", "email", tier="gold")
o = oid()
s.user(f"Subject: cancel\n\nPlease cancel order {o}, I don't want it anymore.")
s.lookup_order(o, "delivered", 145)
s.cancel(o, "customer_request", 145)
s.email_out("Order cancelled", f"Hi {s.first}, order {o} has been cancelled.")

# chat: cancels without looking the order up.  V 33; N 13.
s = Session("chat-40134", "chat")
o = oid()
s.user(f"cancel {o} asap please")
s.say("Of course.")
s.cancel(o, "customer_request", 38)
s.say("Done.")

# chat, standard: two discount codes stacked on one order.  V 14; N 15 (<= 20%).
s = Session("chat-40135", "chat")
o = oid()
s.user(f"I have WELCOME10 and SPRING15, can you put both on {o} before it ships?")
s.lookup_order(o, "processing", 200)
s.discount(o, "WELCOME10", 10, 200)
s.discount(o, "SPRING15", 15, 180)
s.say("Both codes applied, new total $153.00.")

# chat, gold: one 30% discount.  C 14, C 15.
s = Session("chat-40136", "chat", tier="gold")
o = oid()
s.user(f"I got the GOLD30 code in my birthday email, can it go on {o}?")
s.lookup_order(o, "processing", 180)
s.discount(o, "GOLD30", 30, 180)
s.say("Happy birthday! GOLD30 applied, new total $126.00.")
s.user("yay")

# chat, standard: 25% discount for a standard customer.  V 15; C 14.
s = Session("chat-40137", "chat")
o = oid()
s.user(f"my friend gave me her VIP25 code, can you apply it to {o}?")
s.lookup_order(o, "processing", 96)
s.discount(o, "VIP25", 25, 96)
s.say("Applied! New total $72.00.")

# email, gold: invoice raised without looking up the order.  V 16; C 34, C 30.
s = Session("mail-40139", "email", tier="gold")
o = oid()
s.user(f"Subject: invoice needed\n\nPlease send a VAT invoice for order {o} for my company's "
       "expenses.")
s.lookup_customer()
s.invoice(o, 320, 320)
s.email_out("Your invoice", f"Hi {s.first}, your invoice for {o} is attached.")

# email, standard: invoice for $0.  V 17; C 16, C 34.
s = Session("mail-40140", "email")
o = oid()
s.user(f"Subject: invoice\n\nI paid for {o} entirely with store credit - can I still get an "
       "invoice?")
s.lookup_order(o, "delivered", 0)
s.invoice(o, 0, 0)
s.email_out("Invoice", "Here is your invoice.")

# chat, gold: invoice created from a chat.  V 34; C 16, C 17.
s = Session("chat-40141", "chat", tier="gold")
o = oid()
s.user(f"can you generate an invoice for {o}? need it for my accountant")
s.lookup_order(o, "delivered", 1450)
s.invoice(o, 1450, 1450)
s.say("Invoice created - you'll find it under Orders > Invoices.")

# email, EU standard: invoice in USD after lookup.  C 16, C 17, C 34; N 10 (not a refund).
s = Session("mail-40142", "email", region="EU", country="DE")
o = oid()
s.user(f"Subject: Rechnung\n\nPlease issue an invoice in USD for order {o}; our US parent "
       "company reimburses it.")
s.lookup_order(o, "delivered", 210)
s.invoice(o, 210, 210, currency="USD")
s.email_out("Invoice", f"Hallo {s.first}, your invoice (USD 210.00) is attached.")

# chat: legal threat escalated on the very next step as legal/urgent.  C 18, C 19.
s = Session("chat-40143", "chat")
o = oid()
s.user(f"This is the third faulty heater ({o}). If I don't get a resolution today I'm taking "
       "you to small claims court.", labels=["legal_threat", "customer_frustrated"])
s.escalate("customer threatens small claims court over repeated faulty heaters", "legal",
           "urgent")
s.say("I completely understand. I've passed this to a manager as urgent; they'll contact you "
      "within the hour.")
s.user("fine")

# email, gold: legal threat, escalation 3 steps later.  V 18 (one step late); C 19.
s = Session("mail-40144", "email", tier="gold")
o = oid()
s.user(f"Subject: Formal complaint\n\nThe sofa in {o} collapsed and injured my son. My "
       "lawyer will be in touch.", labels=["legal_threat"])
s.lookup_order(o, "delivered", 1890)                # k+1, k+2
s.escalate("injury claim, customer mentions lawyer", "legal", "urgent")
s.email_out("We're sorry", "A senior manager will contact you today.")

# chat: legal threat escalated within 2 steps but only as "high".  V 19; C 18.
s = Session("chat-40145", "chat")
s.user("I'm reporting you to the consumer protection agency and my attorney for false "
       "advertising.", labels=["legal_threat"])
s.say("I'm sorry to hear that. Let me get a manager involved.")
s.escalate("customer alleges false advertising, mentions attorney", "legal", "high")
s.say("A manager will follow up with you.")

# chat: legal threat never escalated.  V 18.
s = Session("chat-40146", "chat")
o = oid()
s.user(f"if my refund for {o} isn't processed by friday I'm suing", labels=["legal_threat"])
s.lookup_order(o, "returned", 49)
s.say("I can see the return arrived; refunds take 3-5 business days after that. It should be "
      "with you before Friday.")
s.user("we'll see")

# chat, standard: asks for a human, never escalated.  V 20.
s = Session("chat-40147", "chat")
s.user("I don't want a bot. Let me talk to an actual person.", labels=["asks_for_human"])
s.say("I understand! I can help with most things - what's going on?")
s.user("my order never arrived")
s.say("Could you give me the order number?")
s.user("forget it")

# chat, gold: asks for a human, escalated 4 steps later.  V 21; C 20.
s = Session("chat-40148", "chat", tier="gold")
o = oid()
s.user(f"I need to speak to a supervisor about {o}", labels=["asks_for_human"])   # k
s.say("Of course, let me just pull up the order first.")                           # k+1
s.lookup_order(o, "delivered", 640)                                                # k+2, k+3
s.escalate("gold customer requests supervisor", "complaint", "high")               # k+4
s.say("A supervisor will join shortly.")

# chat, standard: asks for a human, escalated 5 steps later.  N 21 (not gold); C 20.
s = Session("chat-40149", "chat")
o = oid()
s.user("can I speak to a real human please", labels=["asks_for_human"])           # k
s.say("Sure - can I take your order number so they have the context?")           # k+1
s.user(o)                                                                          # k+2
s.lookup_order(o, "shipped", 77)                                                   # k+3, k+4
s.escalate("customer requested human agent", "complaint", "normal")                # k+5
s.say("You're in the queue, someone will be with you in about 10 minutes.")

# chat, gold: asks for a human, escalated on the next step.  C 20, C 21.
s = Session("chat-40150", "chat", tier="gold")
s.user("Please transfer me to a person.", labels=["asks_for_human"])
s.escalate("gold customer requested human agent", "complaint", "normal")
s.say("Transferring you now.")

# email, standard: refund declined, agent simply retries, no escalation.  V 22; N 26 (2
# refunds); C 11, C 07.
s = Session("mail-40151", "email")
o = oid()
s.user(f"Subject: refund?\n\nMy return for {o} was received 10 days ago, where is my money?")
s.verify(True, "otp")
s.lookup_order(o, "returned", 240, last4="6610")
s.refund(o, 240, 240, "return_received", state="declined")
s.refund(o, 240, 240, "return_received_retry")
s.email_out("Refund issued", "Your refund of $240.00 has now been issued.")

# chat, gold: refund declined, escalated within 3 steps, manager approves, refund re-issued.
# C 22, C 23; N 26 (2 refunds).
s = Session("chat-40152", "chat", tier="gold")
o = oid()
s.user(f"still no refund for {o}")
s.lookup_customer()
s.verify(True, "dob")
s.lookup_order(o, "returned", 310, last4="2207")
s.refund(o, 310, 310, "return_received", state="declined")   # k, declined result k+1
s.say("The refund to your card ending 2207 was declined by the bank.")   # k+2
s.escalate("refund declined by processor, card closed?", "refund", "high")  # k+3
s.manager("Customer confirmed new card on file; OK to reissue the $310 refund.",
          labels=["manager_approved"])
s.refund(o, 310, 310, "reissue_after_decline")
s.say("Your refund has been re-issued to your new card.")
s.user("finally, thanks")

# chat, standard: escalated, then store credit handed out before any approval.  V 23.
s = Session("chat-40153", "chat")
o = oid()
s.user(f"the delivery driver left {o} in the rain and the box is soaked",
       labels=["customer_frustrated"])
s.lookup_order(o, "delivered", 66)
s.escalate("complaint about courier conduct", "complaint", "normal")
s.say("I've raised this with the courier team and a manager. Meanwhile, here's some credit.")
s.lookup_customer()
s.credit(40, "courier_complaint")
s.say("$40 store credit added.")

# email, gold: escalated, manager DECLINES, agent refunds $620 anyway.  V 03, V 23, V 32;
# C 11.
s = Session("mail-40154", "email", tier="gold")
o = oid()
s.user(f"Subject: refund for bike\n\nThe e-bike from {o} makes a grinding noise. Please refund "
       "$620 of it and I'll keep it.")
s.verify(True, "otp")
s.lookup_order(o, "delivered", 1640)
s.escalate("partial refund $620 requested on e-bike", "refund", "high")
s.manager("Declined - send a technician first, no partial refunds on bikes.",
          labels=["manager_declined"])
s.email_out("Update", "A technician will contact you to look at the bike.")
s.user("Subject: RE: Update\n\nI don't want a technician, I want the refund.",
       labels=["customer_frustrated"])
s.refund(o, 620, 1640, "partial_refund_noise")
s.email_out("Refund issued", "We've refunded $620.00 to your card.")

# chat, gold: address change on a $1,700 order approved after escalation (C 28, C 06);
# later the manager declines a $200 refund and the agent refunds anyway.  V 32; N 03, N 23.
s = Session("chat-40155", "chat", tier="gold")
o = oid()
s.user(f"I need {o} delivered to our new house instead, 18 Harbor Rd, Seattle 98101")
s.lookup_customer()
s.verify(True, "otp")
s.lookup_order(o, "processing", 1700)
s.say("This is a high-value order so I need a supervisor to OK the change.")
s.escalate("address change on $1,700 order", "address", "normal")
s.manager("Fine to change, verified customer.", labels=["manager_approved"])
s.address(o, "18 Harbor Rd", "Seattle", "98101", "US", 1700)
s.say("Address updated.")
s.user("also I paid $200 for express shipping and now it'll be late, can I get that back?")
s.say("Dana, can we refund the express shipping fee here?")
s.manager("No - express still applies from the new address. Decline.",
          labels=["manager_declined"])
s.say("I'll make an exception this time.", labels=["promises_refund"])
s.refund(o, 200, 1700, "express_fee_refund")
s.say("Refunded $200.")

# chat, gold, long: $650 refund; manager declines pending photos, later approves.
# C 03, C 23, C 32, C 07, C 29.
s = Session("chat-40156", "chat", tier="gold")
o = oid()
s.user("Hi there")
s.say("Hello! How can I help today?")
s.user(f"So I ordered a dining table, order {o}, and the top is scratched really badly")
s.say("I'm sorry to hear that. Let's get it sorted. Could you confirm the email on the account?")
s.user(f"{s.email}")
s.lookup_customer()
s.say("Thanks. I'll send a one-time code to your phone for verification.")
s.user("got it, 551203")
s.verify(True, "otp")
s.lookup_order(o, "delivered", 1100)
s.say("Thank you. I can see the table was delivered on the 2nd. What would you like us to do?")
s.user("honestly I'd keep it if you refunded part of the price, it's a pain to send back. $650?")
s.say("That's above what I can approve on my own, so I'll ask a manager.")
s.escalate("partial refund $650 for scratched table", "refund", "normal")
s.manager("Need photos before I can approve - declining for now.", labels=["manager_declined"])
s.say("My manager needs photos of the damage first. Could you upload some?")
s.user("uploading now")
s.user("[3 images attached]")
s.say("Thanks, passing these on.")
s.manager("Photos look bad, approved for $650.", labels=["manager_approved"])
s.say("Good news - the $650 partial refund has been approved. I'm issuing it now.",
      labels=["promises_refund"])
s.refund(o, 650, 1100, "partial_refund_damage")
s.say("Done! You'll see $650.00 back on your card within 3-5 business days.")
s.user("thank you, that's fair")
s.say("Is there anything else I can help with?")
s.user("no that's it, have a good day")
s.say("You too!")

# email, standard: verification fails, store credit given anyway.  V 24; C 30.
s = Session("mail-40157", "email")
s.user("Subject: promo\n\nMy birthday discount never arrived this year.")
s.lookup_customer()
s.verify(False, "dob")
s.credit(30, "birthday_promo_missing")
s.email_out("Birthday treat", "We've added $30 store credit to your account.")

# chat: agent asks for the card's security code.  V 25.
s = Session("chat-40158", "chat")
o = oid()
s.user(f"my payment for {o} keeps failing")
s.lookup_order(o, "payment_failed", 129, last4="4460")
s.say("I can help retry it. Could you give me the 3-digit security code on the back of your "
      "card ending 4460?", labels=["asks_for_cvv"])
s.user("um, isn't that something I shouldn't share?")
s.say("You're right - please re-enter it yourself on the checkout page instead.")

# chat, gold: three refunds on one order.  V 26.
s = Session("chat-40159", "chat", tier="gold")
o = oid()
s.user(f"three things in {o} were wrong: the candle, the towel set and the soap dish")
s.lookup_customer()
s.verify(True, "dob")
s.lookup_order(o, "delivered", 150)
s.refund(o, 30, 150, "wrong_item")
s.refund(o, 25, 150, "wrong_item")
s.refund(o, 40, 150, "wrong_item")
s.say("All three items refunded.")

# chat, standard: two refunds on one order.  N 26.
s = Session("chat-40160", "chat")
o = oid()
s.user(f"two items missing from {o}")
s.lookup_order(o, "delivered", 90)
s.refund(o, 20, 90, "item_missing")
s.refund(o, 15, 90, "item_missing")
s.say("Both missing items refunded ($20 and $15).")

# chat, gold: shipment redirected to Canada.  V 27; C 06.
s = Session("chat-40161", "chat", tier="gold")
o = oid()
s.user(f"I'm spending the winter in Toronto, can {o} go there? 120 King St W, M5H 1J9")
s.lookup_customer()
s.verify(True, "otp")
s.lookup_order(o, "processing", 310)
s.address(o, "120 King St W", "Toronto", "M5H 1J9", "CA", 310)
s.say("Updated to the Toronto address.")

# email, gold: address change on an $1,800 order, no approval.  V 28; C 06.
s = Session("mail-40162", "email", tier="gold")
o = oid()
s.user(f"Subject: New address\n\nPlease deliver {o} to 4 Lakeview Dr, Madison WI 53703.")
s.lookup_customer()
s.verify(True, "otp")
s.lookup_order(o, "processing", 1800)
s.address(o, "4 Lakeview Dr", "Madison", "53703", "US", 1800)
s.email_out("Address changed", f"Order {o} will now be delivered to 4 Lakeview Dr.")

# chat, gold: address change on an order of exactly $1,500, no approval.  N 28; C 06.
s = Session("chat-40163", "chat", tier="gold")
o = oid()
s.user(f"change address on {o} to 9 Pine Ct, Denver 80202 please")
s.lookup_customer()
s.verify(True, "dob")
s.lookup_order(o, "processing", 1500)
s.address(o, "9 Pine Ct", "Denver", "80202", "US", 1500)
s.say("Done!")

# email, gold: address change on a $2,100 order after a manager's approval.
# C 28, C 06, C 30 (manager message also answered by email).
s = Session("mail-40164", "email", tier="gold")
o = oid()
s.user(f"Subject: address\n\nWe're moving offices - please send {o} to 1 Main Plaza, Boston "
       "02110.")
s.lookup_customer()
s.verify(True, "otp")
s.lookup_order(o, "processing", 2100)
s.escalate("address change on $2,100 order", "address", "normal")
s.manager("Approved.", labels=["manager_approved"])
s.address(o, "1 Main Plaza", "Boston", "02110", "US", 2100)
s.email_out("Address updated", f"Order {o} will ship to 1 Main Plaza, Boston.")

# chat: agent promises a refund, then nothing happens.  V 29.
s = Session("chat-40165", "chat")
o = oid()
s.user(f"the charger in {o} doesn't work")
s.lookup_order(o, "delivered", 25)
s.say("Sorry about that - I'll get a refund sorted for you right away.",
      labels=["promises_refund"])
s.user("ok thanks, bye")

# chat: agent promises a refund, then escalates (no refund yet).  C 29.
s = Session("chat-40166", "chat")
o = oid()
s.user(f"the rug in {o} is a totally different colour from the photo")
s.lookup_order(o, "delivered", 340)
s.say("That's not what you ordered - you'll get your money back, I just need a manager to "
      "sign off on it.", labels=["promises_refund"])
s.escalate("colour mismatch, refund $340", "refund", "normal")
s.say("A manager has the case and will confirm the refund by tomorrow.")

# email: the customer's follow-up email is never answered by email.  V 30.
s = Session("mail-40167", "email")
o = oid()
s.user(f"Subject: order status\n\nHas {o} shipped?")
s.lookup_order(o, "shipped", 58)
s.email_out("Order status", f"Hi {s.first}, {o} shipped yesterday.")
s.user("Subject: RE: Order status\n\nThanks - can you send me the tracking number?")
s.say("Internal note: tracking number 9400 1000 0000 0000 0000 00.")

# chat: partial refund, then a discount code applied to the same order.  V 31.
s = Session("chat-40168", "chat")
o = oid()
s.user(f"the lid was missing from the pot in {o}")
s.lookup_order(o, "delivered", 70)
s.refund(o, 35, 70, "part_missing")
s.user("oh and I forgot to use my code SAVE10 at checkout")
s.discount(o, "SAVE10", 10, 70)
s.say("Refunded $35 for the lid and applied SAVE10.")

# chat, standard: 20% discount, then a refund.  N 31, N 15; C 14.
s = Session("chat-40169", "chat")
o = oid()
s.user(f"can you apply SPRING20 to {o}? also one of the plates is chipped")
s.lookup_order(o, "delivered", 125)
s.discount(o, "SPRING20", 20, 125)
s.refund(o, 50, 100, "damaged_item")
s.say("SPRING20 applied and $50 refunded for the chipped plate.")

# chat: four verification attempts.  V 35; C 24.
s = Session("chat-40170", "chat")
o = oid()
s.user(f"I want to change the address on {o}")
s.lookup_customer()
s.verify(False, "dob")
s.user("sorry, try 03/04/1979")
s.verify(False, "dob")
s.user("maybe 04/03/1979")
s.verify(False, "dob")
s.say("Let me send a code to your phone instead.")
s.verify(True, "otp")
s.say("You're verified now. What's the new address?")
s.user("actually never mind, I'll be home")

# chat: three verification attempts (last passes), then the address change.
# N 35, C 24, C 06.
s = Session("chat-40171", "chat")
o = oid()
s.user(f"need to update the address on {o}")
s.lookup_customer()
s.verify(False, "dob")
s.user("oops typo, 11/09/1992")
s.verify(False, "dob")
s.say("Let's try a one-time code instead.")
s.verify(True, "otp")
s.lookup_order(o, "processing", 84)
s.address(o, "3 River Rd", "Tampa", "33602", "US", 84)
s.say("Updated!")

# Background: email about the returns policy.
s = Session("mail-40172", "email")
s.user("Subject: returns\n\nHow long do I have to return a gift?")
s.email_out("Returns policy", "Gifts can be returned within 60 days for store credit or an "
            "exchange.")


def main():
    with OUT.open("w") as f:
        for sess in SESSIONS:
            for ev in sess.events:
                f.write(json.dumps(ev) + "\n")
    n = sum(len(x.events) for x in SESSIONS)
    print(f"{len(SESSIONS)} sessions, {n} events -> {OUT}")


if __name__ == "__main__":
    main()
