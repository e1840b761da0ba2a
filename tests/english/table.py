"""English rules with the formulas they mean: the yardstick of the English-to-LTL formalisers.

Each row is (English, expected formula text, source).  The expected formulas are written by hand
from the meaning of the English, often in a different but equivalent form from the one the
formaliser builds (``G (q -> G !p)`` for "after q, p never happens"), because answers are
compared by semantic equivalence (``studio.logic.review.distinguishing_trace``), never by text.

Atom naming follows the offline formaliser's convention, which any engine is expected to follow
when it is measured on this table: a phrase's content words joined by ``_`` without articles,
pronouns or auxiliaries ("the package should be unloaded" -> ``package_unloaded``), a quoted
"atom" verbatim, "the amount exceeds 10000" -> ``data.amount > 10000``.

Sources: ``pattern`` - the property-specification patterns (Dwyer et al.) in several phrasings;
``table2`` - paper 000, Table 2 (informal and precise English); ``sec3.1`` - the examples of
paper 000, section 3.1; ``sec5.2`` - the simple formula of section 5.2; ``ipc``, ``textworld``,
``scienceworld`` - the behavioural constraints of paper 000, Appendix F.1.2 and F.3.2 (where a
rule carries an explanation after its first sentence, or a list the grammar cannot read, the row
keeps the rule sentence or its F.3.2 wording; such rows are marked "(rule sentence)"); ``data`` -
data atoms; ``paraphrase`` - everyday phrasings written after the grammar was built, to measure
it on English it was not tuned to, in two batches (21 of the first 30 and 16 of the second 25
were read right before the fixes they prompted).  Rows that stay wrong are kept: the two of
section 3.1 that need world knowledge or a field-to-field comparison, counts inside a trigger or
an obligation, "before anything else", a scope bound that shares words ("the start and the end
of a transaction").
"""

from __future__ import annotations

from typing import NamedTuple


class Row(NamedTuple):
    english: str
    expected: str
    source: str


TABLE: list[Row] = [
    # --- absence
    Row("never p", "G !p", "pattern"),
    Row("p never happens", "G !p", "pattern"),
    Row("It is never the case that p.", "G !p", "pattern"),
    Row("p must not happen", "G !p", "pattern"),
    Row("Under no circumstances should p occur.", "G !p", "pattern"),
    Row("Sending money is forbidden.", "G !sending_money", "pattern"),
    Row("You must never call send_money.", "G !call_send_money", "pattern"),
    Row('Never "tool_call:send_money".', 'G !"tool_call:send_money"', "pattern"),
    Row("Globally, it is never the case that p.", "G !p", "pattern"),
    Row("An owl never appears.", "G !owl", "table2"),
    Row('At no time step in the trace does the animal "owl" appear.', "G !owl", "table2"),
    # --- universality
    Row("always p", "G p", "pattern"),
    Row("p must always hold", "G p", "pattern"),
    Row("p must hold at all times", "G p", "pattern"),
    Row("It is always the case that p and q.", "G p & G q", "pattern"),
    Row("The color is always red.", "G color_red", "table2"),
    Row("At every time step in the trace, the color must be red.", "G color_red", "table2"),
    # --- existence
    Row("eventually p", "F p", "pattern"),
    Row("p must happen at some point", "F p", "pattern"),
    Row("p must eventually happen", "F p", "pattern"),
    Row("p must occur at least once", "F p", "pattern"),
    Row("At some point, the report is sent.", "F report_sent", "pattern"),
    Row("Sooner or later the session must end.", "F session_end", "pattern"),
    Row("either p or q must eventually happen", "F p | F q", "pattern"),
    # --- response
    Row("whenever p, eventually q", "G (p -> F q)", "pattern"),
    Row("every p is followed by q", "G (p -> F q)", "pattern"),
    Row("if p then q must eventually happen", "G (p -> F q)", "pattern"),
    Row("p must be followed by q", "G (p -> F q)", "pattern"),
    Row("p is always followed by q", "G (p -> F q)", "pattern"),
    Row("Each time p happens, q must happen later.", "G (p -> X F q)", "pattern"),
    Row("whenever p and q, eventually r or s", "G (!p | !q | F (r | s))", "pattern"),
    Row("Whenever a triangle appears, a blue item should eventually appear too.",
        "G (triangle -> F blue_item)", "table2"),
    Row("It is always the case that for every occurrence of a triangle shape, the color blue "
        "must occur at the same time step or at a later time step.",
        "G (triangle_shape -> F color_blue)", "table2"),
    Row("whenever p, q", "G (p -> q)", "pattern"),
    Row("p only if q", "G (p -> q)", "pattern"),
    # --- precedence
    Row("q only after p", "!q W p", "pattern"),
    Row("p must happen before q", "!q W p", "pattern"),
    Row("no q before p", "!q W p", "pattern"),
    Row("q must not happen before p", "!q W p", "pattern"),
    Row("p precedes q", "!q W p", "pattern"),
    Row("q is preceded by p", "G !q | (!q U p)", "pattern"),
    Row("Do not ship the product until payment is confirmed.",
        "!ship_product W payment_confirmed", "pattern"),
    Row("You may only ship after payment.", "!ship W payment", "pattern"),
    # --- chains
    Row("p followed by q followed by r", "G (p -> F (q & X F r))", "pattern"),
    Row("whenever p, eventually q and then r", "G (p -> F (q & X F r))", "pattern"),
    Row("every p is followed by q and then r", "G (p -> F (q & X F r))", "pattern"),
    Row("eventually p, then q, then r", "F (p & X F (q & X F r))", "pattern"),
    Row("r only after p and then q", "!r W (p & !r & X (!r W q))", "pattern"),
    Row("p and then q must happen before r", "!r W (p & !r & X (!r W q))", "pattern"),
    Row("At some point a toucan should appear, followed by either a crane or a pelican, and "
        "then a deer.",
        "F (toucan & X F ((crane & X F deer) | (pelican & X F deer)))", "table2"),
    Row("Eventually event A must occur and at some point after it does, event B must follow.",
        "F (event_a & X F event_b)", "sec5.2"),
    # --- bounded response, next step
    Row("whenever p, q within 3 steps", "G (p -> q | X q | X X q | X X X q)", "pattern"),
    Row("every p must be followed by q within 5 steps", "G (p -> F[0,5] q)", "pattern"),
    Row("whenever p, q within the next 3 steps", "G (p -> X (q | X q | X X q))", "pattern"),
    Row("whenever p, q in the next step", "G (p -> X q)", "pattern"),
    Row("p is immediately followed by q", "G (p -> X q)", "pattern"),
    Row("In the next step, p must hold.", "X p", "pattern"),
    Row("whenever p, q must not happen in the next step", "G !(p & X q)", "pattern"),
    # --- counting
    Row("p at most once", "G (p -> WX G !p)", "pattern"),
    Row("p must happen at most twice", "G !(p & X F (p & X F p))", "pattern"),
    Row("p may happen at most 3 times", "G !(p & X F (p & X F (p & X F p)))", "pattern"),
    Row("p must happen exactly once", "F p & G (p -> WX G !p)", "pattern"),
    Row("p must happen at least twice", "F (p & X F p)", "pattern"),
    Row("p must not happen twice in a row", "G (p -> WX !p)", "pattern"),
    # --- scopes (Dwyer et al.), read as people mean them (issue 14): "before R" and "between Q
    # and R" up to R whether or not R comes, "after Q" after every Q.  Dwyer's readings are offered as the second
    # reading (tests/english/test_formaliser.py checks them against their interval definition).
    Row("Before r, p never happens.", "!p W r", "pattern"),
    Row("After q, p never happens.", "G (q -> G !p)", "pattern"),
    Row("p must never happen after q", "G (q -> G !p)", "pattern"),
    Row("Between q and r, p never happens.", "G ((q & !r) -> (!p W r))", "pattern"),
    Row("After q until r, p never happens.", "G ((q & !r) -> (!p W r))", "pattern"),
    Row("Before r, p must always hold.", "p W r", "pattern"),
    Row("After q, p must always hold.", "G (q -> G p)", "pattern"),
    Row("Between q and r, p must hold.", "G ((q & !r) -> (p W r))", "pattern"),
    Row("After q until r, p must always hold.", "G ((q & !r) -> (p W r))", "pattern"),
    Row("Before r, p must happen.", "!r W p", "pattern"),
    Row("After q, p must eventually happen.", "G (q -> F p)", "pattern"),
    Row("Between q and r, p must eventually happen.", "G ((q & !r) -> (!r W (p & !r)))",
        "pattern"),
    Row("After q until r, p must eventually happen.", "G ((q & !r) -> (!r U (p & !r)))",
        "pattern"),
    Row("Before r, s must happen before p.", "!p W (s | r)", "pattern"),
    Row("After q, p only after s.", "G (q -> (!p W s))", "pattern"),
    Row("Between q and r, every p is followed by s.",
        "G ((q & !r) -> ((p -> (!r U (s & !r))) W r))", "pattern"),
    Row("After q until r, every p is followed by s.",
        "G ((q & !r) -> ((p -> (!r U (s & !r))) W r))", "pattern"),
    Row("A green item should not occur between a fox and a star.",
        "G ((fox & !star & F star) -> (!green_item U star))", "table2"),
    Row("It is always the case that if a fox appears at a time step where a star does not "
        "appear, and a star will appear at some future time step, then the color green must not "
        "appear at any time step from that point until the star appears.",
        "G ((fox & !star & F star) -> (!color_green U star))", "table2"),
    Row("Whenever a square appears, a fox should not appear until a circle appears.",
        "G (square -> (!fox U circle))", "table2"),
    Row("It is always the case that whenever a square shape appears, the animal fox must not "
        "appear at any time step from that point until the shape circle appears. For every "
        "square shape, the shape circle must eventually appear at that time step or at a later "
        "time step.", "G (square_shape -> (!animal_fox U shape_circle))", "table2"),
    # --- boolean structure inside phrases
    Row("never p or q", "G !p & G !q", "pattern"),
    Row("neither p nor q must ever happen", "G !p & G !q", "pattern"),
    Row("always p but not q", "G p & G !q", "pattern"),
    Row("never (p and q)", "G (p -> !q)", "pattern"),
    Row("always p; never q", "G (p & !q)", "pattern"),
    # --- paper 000, section 3.1
    Row("Do not ship the product until after payment is confirmed.",
        "!ship_product W (payment_confirmed & !ship_product)", "sec3.1"),
    Row("Always warmly greet the customer and provide your agent identification number before "
        "engaging in further conversation.",
        "!engaging_in_further_conversation W warmly_greet_customer & "
        "!engaging_in_further_conversation W provide_agent_identification_number", "sec3.1"),
    Row("Do not process a transaction above $10,000 without human authorization.",
        "G (process_transaction & data.amount > 10000 -> O human_authorization)", "sec3.1"),
    # --- data atoms
    Row("The amount must never exceed 10000.", "G !(data.amount > 10000)", "data"),
    Row("Whenever the amount exceeds 10000, a manager must approve within 2 steps.",
        "G (data.amount > 10000 -> F[0,2] manager_approve)", "data"),
    Row('The status must eventually be "passed".', 'F data.status == "passed"', "data"),
    Row("output.args.amount must never exceed 10000", "G !(output.args.amount > 10000)", "data"),
    Row("Never process a transaction whose amount exceeds $10,000 without human authorization.",
        "G !(process_transaction & data.amount > 10000 & !O human_authorization)", "data"),
    Row("Always stop at red lights.", "G (red_light -> stop)", "sec3.1"),
    Row("Do not process transactions that exceed an account's daily limit.",
        "G !(process_transactions & data.amount > data.daily_limit)", "sec3.1"),
    # --- paraphrases written after the grammar, as a check on phrasings it was not built from
    Row("The agent must not send money.", "G !agent_send_money", "paraphrase"),
    Row("Money must never be sent.", "G !money_sent", "paraphrase"),
    Row("Every request must eventually be answered.", "G (request -> F answered)", "paraphrase"),
    Row("After the payment is confirmed, the product must eventually be shipped.",
        "G (payment_confirmed -> F product_shipped)", "paraphrase"),
    Row("If the user asks for a refund, the agent must escalate within 2 steps.",
        "G (user_asks_for_refund -> F[0,2] agent_escalate)", "paraphrase"),
    Row("The agent should always verify the identity before sending money.",
        "!sending_money W agent_verify_identity", "paraphrase"),
    Row("Do not delete files.", "G !delete_files", "paraphrase"),
    Row("Deleting files is not allowed.", "G !deleting_files", "paraphrase"),
    Row("A confirmation must be sent at some point.", "F confirmation_sent", "paraphrase"),
    Row("Whenever an error occurs, the agent must report it in the next step.",
        "G (error -> X agent_report_error)", "paraphrase"),
    Row("Never call the payment tool more than once.",
        "G (call_payment_tool -> WX G !call_payment_tool)", "paraphrase"),
    Row("The login must happen exactly once.", "F login & G (login -> WX G !login)",
        "paraphrase"),
    Row("Logging in must precede every purchase.", "!purchase W logging_in", "paraphrase"),
    Row("Purchases are allowed only after logging in.", "!purchases W logging_in", "paraphrase"),
    Row("At no point may the balance be negative.", "G !balance_negative", "paraphrase"),
    Row("The balance must never drop below 0.", "G !(data.balance < 0)", "paraphrase"),
    Row("Once the session is closed, no more messages may be sent.",
        "G (session_closed -> G !messages_sent)", "paraphrase"),
    Row("Whenever the temperature is above 30, the fan must be on.",
        "G (data.temperature > 30 -> fan_on)", "paraphrase"),
    Row("Eventually the task is completed.", "F task_completed", "paraphrase"),
    Row("It must always be the case that the door is closed or locked.",
        "G (door_closed | door_locked)", "paraphrase"),
    Row("If the alarm rings, the guard must eventually respond.",
        "G (alarm_rings -> F guard_respond)", "paraphrase"),
    Row("Between login and logout, the user must not change the password.",
        "G ((login & !logout) -> (!user_change_password W logout))", "paraphrase"),
    Row("Before the deadline, the report must be submitted.",
        "!deadline W report_submitted", "paraphrase"),
    Row("The agent must never use the shell after the user says stop.",
        "G (user_says_stop -> G !agent_use_shell)", "paraphrase"),
    Row("Each approval must be preceded by a review.", "!approval W review", "paraphrase"),
    Row("Review comes before approval.", "!approval W review", "paraphrase"),
    Row("Every alarm is immediately followed by a shutdown.", "G (alarm -> X shutdown)",
        "paraphrase"),
    Row("The system must not restart twice in a row.",
        "G !(system_restart & X system_restart)", "paraphrase"),
    Row("Whenever the light is red, the car must stop.", "G (light_red -> car_stop)",
        "paraphrase"),
    Row("A refund must never be issued without manager approval.",
        "G (refund_issued -> O manager_approval)", "paraphrase"),
    # --- a second batch of such paraphrases
    Row("The assistant must never reveal the password.", "G !assistant_reveal_password",
        "paraphrase"),
    Row("Whenever the user says goodbye, the session must end in the next step.",
        "G (user_says_goodbye -> X session_end)", "paraphrase"),
    Row("A backup must be made before any deletion.", "!deletion W backup_made", "paraphrase"),
    Row("Files may be deleted only after a backup is made.", "!files_deleted W backup_made",
        "paraphrase"),
    Row("The agent must ask for confirmation before it transfers funds.",
        "!agent_transfers_funds W agent_ask_for_confirmation", "paraphrase"),
    Row("If the password is wrong three times, the account is locked.",
        "G (password_wrong & Y O (password_wrong & Y O password_wrong) -> account_locked)",
        "paraphrase"),
    Row("Every order must be shipped within 5 steps.", "G (order -> F[0,5] shipped)",
        "paraphrase"),
    Row("The robot must eventually reach the goal and never hit an obstacle.",
        "F robot_reach_goal & G !robot_hit_obstacle", "paraphrase"),
    Row("Never send an email after the user unsubscribes.",
        "G (user_unsubscribes -> G !send_email)", "paraphrase"),
    Row("Whenever a payment fails, retry at most twice.",
        "G (payment_fails -> G !(retry & X F (retry & X F retry)))", "paraphrase"),
    Row("The temperature must stay below 100.", "G data.temperature < 100", "paraphrase"),
    Row("If the door is open, the alarm must sound within 10 steps.",
        "G (door_open -> F[0,10] alarm_sound)", "paraphrase"),
    Row("Log in before you do anything else.", "log_in", "paraphrase"),
    Row("The agent may use the search tool at most 5 times.",
        "G !(u & X F (u & X F (u & X F (u & X F (u & X F u)))))"
        .replace("u", "agent_use_search_tool"), "paraphrase"),
    Row("Do not call the API twice in a row.", "G !(call_api & X call_api)", "paraphrase"),
    Row("Whenever the agent calls a tool, it must eventually report the result.",
        "G (agent_calls_tool -> F agent_report_result)", "paraphrase"),
    Row("The user must be authenticated before any payment is made.",
        "!payment_made W user_authenticated", "paraphrase"),
    Row("At some point, the agent must summarise the conversation.",
        "F agent_summarise_conversation", "paraphrase"),
    Row("After the user logs out, the agent must not access the account.",
        "G (user_logs_out -> G !agent_access_account)", "paraphrase"),
    Row("Between the start and the end of a transaction, the balance must not be shown.",
        "G ((start_of_transaction & !end_of_transaction & F end_of_transaction) -> "
        "(!balance_shown U end_of_transaction))", "paraphrase"),
    Row("Each warning must be followed by an acknowledgement.",
        "G (warning -> F acknowledgement)", "paraphrase"),
    Row("The agent must not apologise more than once.",
        "G (agent_apologise -> WX G !agent_apologise)", "paraphrase"),
    Row("Whenever the risk score exceeds 0.8, the agent must stop.",
        "G (data.risk_score > 0.8 -> agent_stop)", "paraphrase"),
    Row("Greeting must happen before anything else.", "greeting", "paraphrase"),
    Row("It is forbidden to share personal data.", "G !share_personal_data", "paraphrase"),
    # --- IPC-Trucks (Appendix F.1.2, F.3.2)
    Row("Packages should always be loaded only in area a1.",
        "G (packages_loaded -> packages_loaded_in_area_a1)", "ipc"),
    Row("Packages should always be loaded only in areas a1 or a2.",
        "G (packages_loaded -> packages_loaded_in_area_a1 | packages_loaded_in_area_a2)", "ipc"),
    Row("Packages should always be loaded only in areas a1, a2, or a3.",
        "G (packages_loaded -> packages_loaded_in_area_a1 | packages_loaded_in_area_a2 | "
        "packages_loaded_in_area_a3)", "ipc"),
    Row("package2 should be delivered before package1 is delivered",
        "!package1_delivered W package2_delivered", "ipc"),
    Row("package3 should be delivered before package2 is delivered.",
        "!package2_delivered W package3_delivered", "ipc"),
    Row("package20 should be delivered before package19 is delivered",
        "!package19_delivered W package20_delivered", "ipc"),
    Row("package5 should be delivered before package4 is delivered.",
        "!package4_delivered W package5_delivered", "ipc"),
    Row("Package1 should be loaded into a truck at most once",
        "G (package1_loaded_into_truck -> WX G !package1_loaded_into_truck)", "ipc"),
    Row("Package16 should be loaded into a truck at most once",
        "G (package16_loaded_into_truck -> WX G !package16_loaded_into_truck)", "ipc"),
    Row("When loading a package in area a1, a1 must be free.",
        "G (loading_package_in_area_a1 -> a1_free)", "ipc"),
    Row("When loading a package in area a3, a2 must be free.",
        "G (loading_package_in_area_a3 -> a2_free)", "ipc"),
    Row("When unloading a package from area a2, a1 must be free.",
        "G (unloading_package_from_area_a2 -> a1_free)", "ipc"),
    Row("When delivering a package, the package should be unloaded before.",
        "G (delivering_package -> Y O package_unloaded)", "ipc"),
    Row("When delivering a package, the truck must be at the delivery location.",
        "G (delivering_package -> truck_at_delivery_location)", "ipc"),
    Row("When loading a package, the target area in the truck must be free.",
        "G (loading_package -> target_area_in_truck_free)", "ipc"),
    # --- TextWorld (Appendix F.1.2)
    Row("Rule 1: If you take an item, you have to examine it in the next step.",
        "G (take_item -> X examine_item)", "textworld"),
    Row("Rule 2: Only take the knife if you will use it to chop, slice, or dice something within "
        "the next four steps.",
        "G (take_knife -> F[1,4] chop | F[1,4] slice | F[1,4] dice)", "textworld"),
    Row("Rule 3: Do not drop things.", "G !drop", "textworld"),
    Row("Rule 4: Do not go out of the kitchen.", "G !go_out_of_kitchen", "textworld"),
    Row("Never leave the kitchen.", "G !leave_kitchen", "textworld"),
    # --- ScienceWorld (Appendix F.1.2, F.3.2)
    Row("Rule 1: If you open a door at step t, then you must go through that door at step t+1.",
        "G (open_door -> X go_through_door)", "scienceworld (rule sentence)"),
    Row("Rule 2: If you go into a room at step t, then at step t+1 you must look around to "
        "familiarize yourself with your surroundings.",
        "G (go_into_room -> X look_around)", "scienceworld"),
    Row("Rule 3: You must not look around twice in a row.",
        "G !(look_around & X look_around)", "scienceworld"),
    Row("Don't go to the bedroom, workshop, or greenhouse.",
        "G !go_to_bedroom & G !go_to_workshop & G !go_to_greenhouse", "scienceworld"),
    Row("You may only go to the living room, kitchen, art studio and hallway.",
        "G (go -> go_to_living_room | go_to_kitchen | go_to_art_studio | go_to_hallway)",
        "scienceworld (rule sentence)"),
    Row("Rule 5: When you pick up an object at step t, you must look around or look at it at the "
        "next step to see the result.",
        "G (pick_up_object -> X (look_around | look_at_object))", "scienceworld"),
    Row("Rule 5: You must measure the temperature of substance B with a thermometer before you "
        "put substance B into a box.",
        "!put_substance_b_into_box W measure_temperature_of_substance_b_with_thermometer",
        "scienceworld (rule sentence)"),
    Row("Putting substance B into a box before measuring its temperature is a violation.",
        "!putting_substance_b_into_box W measuring_temperature", "scienceworld"),
    Row("When you pour, mix or dunk something at step t, you must look around or look at the "
        "object at the next step.",
        "G (pour | mix | dunk -> X (look_around | look_at_object))",
        "scienceworld (rule sentence)"),
    Row("You should not interact with yellow paint directly.",
        "G !interact_with_yellow_paint", "scienceworld"),
    Row("You should not pick up, pour or dunk the yellow paint.",
        "G !(pick_up_yellow_paint | pour_yellow_paint | dunk_yellow_paint)",
        "scienceworld (rule sentence)"),
    Row("You should only focus on the green paint.", "G (focus -> focus_on_green_paint)",
        "scienceworld (rule sentence)"),
    # --- issue 14: the causes of misreadings on fresh English (development rows, written by
    # the formaliser's developer; the held-out set in bench/english_heldout.jsonl is not here)
    Row('Throughout the game, never attack the guard.', 'G !attack_guard', "issue14"),
    Row('While the account is locked, do not send money.', 'G (account_locked -> !send_money)', "issue14"),
    Row('Until the identity is verified, the agent must not send money.', '!agent_send_money W identity_verified', "issue14"),
    Row('Unless the manager approved it, never issue a refund.', 'G (issue_refund -> manager_approved)', "issue14"),
    Row('Only after the user confirms may the agent book the flight.', '!agent_book_flight W user_confirms', "issue14"),
    Row('As soon as fraud is detected, the account must be frozen.', 'G (fraud_detected -> X account_frozen)', "issue14"),
    Row('Immediately after a login failure, the agent must lock the account.', 'G (login_failure -> X agent_lock_account)', "issue14"),
    Row('At the end of the session, the cart must be empty.', 'F (cart_empty & WX false)', "issue14"),
    Row('The door must remain locked.', 'G door_locked', "issue14"),
    Row('The report must be sent before the session ends.', 'F report_sent', "issue14"),
    Row('Do not eat the apple twice.', '!eat_apple W (eat_apple & WX G !eat_apple)', "issue14"),
    Row('Every refund must be immediately preceded by a manager approval.', 'G (refund -> Y manager_approval)', "issue14"),
    Row('Take the key and unlock the door.', 'F (take_key & X F unlock_door)', "issue14"),
    Row('The agent must open a ticket and then notify the customer.', 'F (agent_open_ticket & X F notify_customer)', "issue14"),
    Row('Never run shell commands during maintenance.', 'G !(maintenance & run_shell_commands)', "issue14"),
    Row('Transfers above 5000 require a second approval.', 'G ((transfers & data.amount > 5000) -> O second_approval)', "issue14"),
    Row('The balance must stay below 100 throughout the game.', 'G (data.balance < 100)', "issue14"),
    Row('The bot must greet the customer at the start of the conversation.', 'bot_greet_customer', "issue14"),
    Row('Nobody may delete the database.', 'G !delete_database', "issue14"),
    Row('A payment can only be executed once the invoice has been approved.', '!payment_executed W invoice_approved', "issue14"),
]
