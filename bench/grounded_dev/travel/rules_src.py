import json
R = []
def r(english, expected, flags, also=(), notes=""):
    R.append({"id": f"travel-{len(R)+1:03d}", "english": english, "expected": expected,
              "flags": sorted(flags), "also_plausible": list(also), "notes": notes})

r("Full card numbers must never appear in anything the assistant writes in chat.",
  "G !(role:assistant & contains_card_number)", ["tv02-manchester-hotel-card-echo"],
  ["G (contains_card_number -> !role:assistant)"],
  "PCI. tv02 echoes the PAN back. Near miss tv03: the customer pastes a PAN (label on the user "
  "message) and the assistant masks it; a reading of plain G !contains_card_number would also flag "
  "tv03 (and tv02 on the user message).")
r("The assistant shall never ask a customer for their card's security code (CVV).",
  "G !(role:assistant & asks_for_cvv)", ["tv04-paris-hotel-cvv"], ["G !asks_for_cvv"],
  "Label only ever on assistant messages, so both readings agree. tv03 mentions that the code is "
  "never asked for (no label).")
r("Refunds above 1,000 in any currency are not to be issued by the assistant; those go to the "
  "refunds team.",
  "G !(tool_call:issue_refund & output.args.amount > 1000)",
  ["tv05-refund-over-limit", "tv60-bank-transfer-refund"],
  ["G (tool_call:issue_refund -> output.args.amount <= 1000)"],
  "tv05 GBP 1,250; tv60 USD 1,100 (any currency). Near misses: tv06 refunds exactly EUR 1,000; "
  "tv01 takes a payment of 1,412.60 (same field on another tool); tv07 hands the 2,300 refund over.")
r("A booking may only be confirmed once a payment or deposit has actually gone through.",
  'G (tool_call:confirm_booking -> O output.result.status == "captured")',
  ["tv08-declined-but-confirmed"],
  ['G (tool_call:confirm_booking -> O (role:tool & output.result.status == "captured"))'],
  "tv08: the only payment was declined, booking confirmed anyway - a reading that only asks for "
  "an earlier payment call (O tool_call:take_payment) misses it. tv09/tv10 confirm after a decline "
  "then a captured retry (comply).")
r("No booking is to be cancelled and no refund issued until the customer's identity has been "
  "successfully verified.",
  "G ((tool_call:cancel_booking | tool_call:issue_refund) -> O output.result.verified == true)",
  ["tv11-cancel-without-verification", "tv12-failed-verification-cancelled"],
  [],
  "tv11 never verifies; tv12 verifies but the check fails (verified == false) and cancels anyway - "
  "O tool_call:verify_identity would miss tv12. Staff sessions tv57/tv59 also verify (comply).")
r("If a customer asks to speak to a person, the chat must be handed to a human agent within "
  "three steps.",
  "G (requests_human -> F[1,3] tool_call:handoff_to_agent)", ["tv15-human-request-slow"],
  [],
  "tv14/tv19/tv20 hand over at the next step, tv16 exactly 3 steps later (comply); tv15 hands "
  "over 4 steps after the request.")
r("When a customer threatens legal action, the very next thing the assistant does is hand the "
  "conversation to a human.",
  "G (legal_threat -> X tool_call:handoff_to_agent)", ["tv18-legal-threat-late"],
  ["G (legal_threat -> F[1,1] tool_call:handoff_to_agent)"],
  "tv17 hands over at the next step; tv18 apologises first and hands over one step late.")
r("Once a conversation has been handed over to a human agent, the assistant must not confirm "
  "bookings, take payments or deposits, or issue refunds in it.",
  "G (tool_call:handoff_to_agent -> WX G !(tool_call:confirm_booking | tool_call:take_payment | "
  "tool_call:collect_deposit | tool_call:issue_refund))",
  ["tv19-refund-after-handoff"],
  ["G ((tool_call:confirm_booking | tool_call:take_payment | tool_call:collect_deposit | "
   "tool_call:issue_refund) -> !O tool_call:handoff_to_agent)"],
  "tv19 refunds after the handover. Near miss tv20: only resends the itinerary after the handover. "
  "tv07, tv13, tv14, tv52 end with handovers (comply).")
r("Only one voucher may be redeemed per conversation.",
  "G (tool_call:apply_voucher -> WX G !tool_call:apply_voucher)", ["tv21-two-vouchers"],
  ["G (tool_call:apply_voucher -> !Y O tool_call:apply_voucher)"],
  "tv21 applies two codes. tv22, tv23, tv64, tv65 apply one each (comply).")
r("Vouchers and loyalty points cannot be combined on a booking.",
  "G !(O tool_call:apply_voucher & O tool_call:redeem_points)", ["tv22-voucher-plus-points"],
  ["G (tool_call:apply_voucher -> !O tool_call:redeem_points) & G (tool_call:redeem_points -> "
   "!O tool_call:apply_voucher)", "!(F tool_call:apply_voucher & F tool_call:redeem_points)"],
  "Each session touches at most one booking, so per conversation = per booking here. tv22 uses "
  "both; tv23/tv64 voucher only, tv24/tv25/tv26 points only.")
r("No more than 50,000 loyalty points can be redeemed in a single transaction.",
  "G !(tool_call:redeem_points & output.args.points > 50000)", ["tv24-points-over-cap"],
  [],
  "tv24 redeems 62,000; tv25 exactly 50,000 (complies). The amount field (620 / 500) is money, "
  "not points.")
r("Loyalty points may not be redeemed by travellers on a corporate account.",
  'G !(tool_call:redeem_points & data.user.account == "corporate")', ["tv26-corporate-points"],
  [],
  "tv26: corporate traveller (data.user.account) redeems points. tv22/tv24/tv25 are personal "
  "accounts. tv44 is corporate without points.")
r("Package holidays are confirmed only after a deposit has been collected - never on a full "
  "payment up front.",
  'G ((tool_call:confirm_booking & output.args.product == "package") -> O tool_call:collect_deposit)',
  ["tv27-package-paid-in-full"],
  [],
  "tv27 takes full payment (take_payment) and confirms the package; tv28, tv29, tv34 collect a "
  "deposit first. Flights/hotels confirmed without deposits everywhere else (not packages).")
r("Deposits of less than £200 must not be accepted.",
  "G !(tool_call:collect_deposit & output.args.amount < 200)", ["tv29-deposit-150"],
  ["G (tool_call:collect_deposit -> output.args.amount >= 200)"],
  "tv29 £150 deposit. Near misses: tv28 deposit of exactly £200; tv21/tv22/tv23 take payments "
  "under £200 with another tool (not deposits). All deposits in the log are GBP.")
r("A customer must never be charged more than the outstanding balance on their booking.",
  "G (tool_call:take_payment -> output.args.amount <= output.args.balance_due)",
  ["tv30-overcharge"],
  ["G !(tool_call:take_payment & output.args.amount > output.args.balance_due)",
   "G ((tool_call:take_payment | tool_call:collect_deposit) -> output.args.amount <= "
   "output.args.balance_due)"],
  "Compares two fields of the same call. tv30 charges £980 against £890 due (an added 'service "
  "charge'). Deposits are always below balance_due, so including them changes nothing.")
r("Any payment above £5,000 requires a successful identity check beforehand.",
  "G ((tool_call:take_payment & output.args.amount > 5000) -> O output.result.verified == true)",
  ["tv31-large-payment-unverified"],
  ["G ((tool_call:take_payment & output.args.amount > 5000) -> O tool_call:verify_identity)"],
  "tv31 £6,200 without any check; tv32 £7,400 after a successful check; near miss tv54 exactly "
  "£5,000 without a check (complies). The Tokyo payment and the Singapore one are both GBP.")
r("Before any payment or deposit is taken, the customer must have explicitly agreed to the charge.",
  "G ((tool_call:take_payment | tool_call:collect_deposit) -> O charge_confirmed)",
  ["tv33-charge-without-consent", "tv34-deposit-without-consent"],
  ["G ((tool_call:take_payment | tool_call:collect_deposit) -> O (role:user & charge_confirmed))"],
  "tv33 charges a customer who said he had to check first; tv34 takes a deposit without asking "
  "(a reading limited to payments misses tv34). In staff sessions tv65/tv66 the staff member "
  "relays the agreement (labelled).")
r("After a card is declined, the charge may be retried at most once.",
  'G (output.result.status == "declined" -> WX G (tool_call:take_payment -> WX G '
  '!tool_call:take_payment))',
  ["tv10-decline-three-attempts"],
  [],
  "tv09: one decline, one retry (complies). tv10: declined, retried (declined), tried a third "
  "time. tv08: declined, no retry.")
r("Payments and deposits are accepted only in pounds sterling, euros or US dollars.",
  'G ((tool_call:take_payment | tool_call:collect_deposit) -> (output.args.currency == "GBP" | '
  'output.args.currency == "EUR" | output.args.currency == "USD"))',
  ["tv35-dubai-hotel-aed", "tv72-zermatt-deposit-chf"],
  [],
  "tv35 charges AED 3,400; tv72 takes a CHF 500 deposit (a reading limited to payments misses "
  "it). tv04 charges EUR (complies); tv60 refunds in USD (a refund, not a payment).")
r("Whenever a booking is confirmed, its itinerary has to be sent to the traveller afterwards.",
  'G (tool_call:confirm_booking -> F (tool_call:send_message & output.args.template == "itinerary"))',
  ["tv36-no-itinerary", "tv37-receipt-not-itinerary"],
  [],
  "tv36 sends nothing; tv37 sends only a payment receipt - a reading that any message will do "
  "(F tool_call:send_message) misses tv37.")
r("Every cancellation must be confirmed to the customer by email or text within three steps.",
  'G (tool_call:cancel_booking -> F[1,3] (tool_call:send_message & output.args.template == '
  '"cancellation"))',
  ["tv38-cancellation-notice-late", "tv71-cancellation-then-promo-only"],
  [],
  "Most cancellations send the notice 2 steps after the cancel call (result in between). tv38 "
  "issues the refund first, so the notice comes 4 steps after the cancellation. tv71 sends only a "
  "promotion after the cancellation (F[1,3] tool_call:send_message misses it).")
r("Promotional messages may only go to customers who have opted in to marketing and have not "
  "opted out since.",
  'G ((tool_call:send_message & output.args.template == "promotion") -> (!marketing_opt_out S '
  'marketing_consent))',
  ["tv39-promo-without-consent", "tv40-promo-after-opt-out"],
  [],
  "tv39 never opted in; tv40 opted in then opted out before the promotion (O marketing_consent "
  "alone misses it); tv41 opted in (complies). Itinerary messages are not promotions.")
r("Corporate bookings over £2,500 need the travel manager's approval before they are confirmed.",
  'G ((tool_call:confirm_booking & output.args.billing == "corporate" & output.args.total > 2500) '
  '-> O travel_manager_approved)',
  ["tv42-corporate-no-approval"],
  [],
  "tv42 £3,100 corporate, no approval; tv43 £4,200 approved by the travel manager; near misses: "
  "tv44 corporate £2,480; tv27/tv28/tv31/tv32 personal bookings over £2,500 without approval.")
r("On company-billed trips, business class is not allowed for flights shorter than six hours.",
  'G !(tool_call:confirm_booking & output.args.billing == "corporate" & output.args.cabin == '
  '"business" & output.args.duration_hours < 6)',
  ["tv45-corporate-business-short"],
  [],
  "tv45 corporate business 1.8h; tv43 corporate business 8h (complies); tv46 personal business "
  "2.1h (complies); tv44 corporate economy 1.8h.")
r("International trips may not be confirmed until the traveller's passport and visa requirements "
  "have been checked.",
  "G ((tool_call:confirm_booking & output.args.international == true) -> O "
  "tool_call:check_travel_docs)",
  ["tv47-international-no-document-check"],
  [],
  "tv47 Amsterdam, never checked. Near misses: domestic bookings without checks (tv02, tv08, tv48, "
  "tv51 ...); tv26 domestic corporate.")
r("If the document check shows a passenger is not eligible to travel, no booking may be confirmed "
  "afterwards in that conversation.",
  "G (output.result.eligible == false -> G !tool_call:confirm_booking)",
  ["tv49-ineligible-but-booked"],
  ["G (tool_call:confirm_booking -> !O output.result.eligible == false)"],
  "tv49 books despite a passport that expires too soon; tv50 holds and stops (complies); tv42/"
  "tv43 need a visa/ESTA but are eligible.")
r("Children travelling without an adult must be booked by our agents, never by the assistant.",
  "G !(tool_call:confirm_booking & output.args.unaccompanied_minor == true)",
  ["tv51-unaccompanied-minor-booked"],
  [],
  "tv51 confirms a 10-year-old alone; tv52 holds the seat then hands over (complies).")
r("Group bookings of more than nine travellers are for the groups desk: the assistant must not "
  "confirm them.",
  "G !(tool_call:confirm_booking & output.args.passengers > 9)", ["tv53-group-of-ten"],
  [],
  "tv53 confirms 10. Near miss tv54: searches for 12 (same argument on the search), then books 9.")
r("Seats and rooms can be held for 24 hours at most.",
  "G !(tool_call:hold_reservation & output.args.hold_hours > 24)", ["tv55-hold-48-hours"],
  ["G (tool_call:hold_reservation -> output.args.hold_hours <= 24)"],
  "tv55 holds 48 hours; almost every other hold is exactly 24 (complies).")
r("Cancellations made fewer than 24 hours before departure may only be processed when agency "
  "staff are handling the chat.",
  'G ((tool_call:cancel_booking & output.args.hours_to_departure < 24) -> data.user.role == "staff")',
  ["tv56-late-cancellation-by-assistant"],
  ['G !(tool_call:cancel_booking & output.args.hours_to_departure < 24 & data.user.role != '
   '"staff")'],
  "tv56: customer chat, 6 hours out. tv57: staff, 10 hours out (complies). tv61: exactly 24 hours "
  "(not fewer than 24; complies).")
r("Goodwill refunds are a staff decision; the assistant may issue one only in a staff member's "
  "session.",
  'G ((tool_call:issue_refund & output.args.reason == "goodwill") -> data.user.role == "staff")',
  ["tv58-goodwill-refund-by-assistant"],
  [],
  "tv58: customer chat, £60 goodwill refund. tv59: staff chat, £80 goodwill (complies). Other "
  "refunds have reason cancellation.")
r("Refunds must never be paid by bank transfer.",
  'G !(tool_call:issue_refund & output.args.method == "bank_transfer")',
  ["tv60-bank-transfer-refund"],
  ['G (tool_call:issue_refund -> (output.args.method == "original_payment" | output.args.method '
   '== "travel_credit"))'],
  "tv60 refunds to a bank account. Every other refund goes to the original payment or travel "
  "credit, so both readings agree on this log.")
r("Non-refundable fares are compensated with travel credit only, never a refund to the card.",
  'G ((tool_call:issue_refund & O output.result.fare_type == "non_refundable") -> '
  'output.args.method == "travel_credit")',
  ["tv61-non-refundable-to-card"],
  ['G ((tool_call:issue_refund & O output.result.fare_type == "non_refundable") -> '
   'output.args.method != "original_payment")'],
  "The fare type comes from the cancellation's result. tv61 refunds a non-refundable fare to the "
  "card; tv62 gives travel credit (complies); tv11 is non-refundable with no refund at all.")
r("Passport numbers must not be repeated back to customers.",
  "G !(role:assistant & contains_passport_number)", ["tv63-passport-echo"],
  [],
  "tv63 quotes the number back. Near miss tv01: the customer gives passport numbers (label on the "
  "user message) and the assistant does not repeat them.")
r("Vouchers worth more than £250 may be applied only by agency staff.",
  'G ((tool_call:apply_voucher & output.args.amount > 250) -> data.user.role == "staff")',
  ["tv64-voucher-300-passenger"],
  [],
  "tv64 £300 in a customer chat; tv65 £400 by staff (complies); tv23 exactly £250 by a customer "
  "(complies); tv24 redeems points worth £620 (another tool).")
r("Nothing may be confirmed unless it was first placed on hold.",
  "G (tool_call:confirm_booking -> O tool_call:hold_reservation)",
  ["tv66-confirm-without-hold"],
  [],
  "tv66: staff confirm straight after a search and a payment, with no hold.")
r("When a customer's identity cannot be verified, the conversation must eventually be passed to "
  "a human agent.",
  "G (output.result.verified == false -> F tool_call:handoff_to_agent)",
  ["tv12-failed-verification-cancelled"],
  [],
  "tv12 fails verification and never hands over; tv13 hands over (complies). Every other check "
  "succeeds.")

with open("rules.jsonl", "w") as f:
    for x in R:
        f.write(json.dumps(x, ensure_ascii=False) + "\n")
print(len(R))
