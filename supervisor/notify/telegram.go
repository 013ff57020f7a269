package notify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// Actions a person can answer an event with from a messenger.
const (
	ActionApprove = "approve"
	ActionDeny    = "deny"
	ActionRestart = "restart"
	ActionScreen  = "screen"
	// ActionOption is option:N, the question's Nth option (from 1).
	ActionOption = "option:"
)

const (
	maxCallbackData = 64  // bytes, Telegram's limit on a button's data
	maxButtonText   = 30  // runes of an option's text on its button
	maxCallbackText = 200 // runes of an answer to a press
	defaultPoll     = 50 * time.Second
	maxUpdates      = 8 << 20 // the most of a getUpdates answer read
)

// inlineKeyboard is Telegram's inline_keyboard markup. (The library's
// InlineKeyboardButton always writes "copy_text":{"text":""}, which the
// Bot API may take for a second kind of button; this writes only what a
// callback button is.)
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// buttons are the event's actions as buttons, each pressed with
// "<action>|<event id>": options one to a row, the others on one row.
func buttons(e Event) (*inlineKeyboard, error) {
	if len(e.Actions) == 0 {
		return nil, nil
	}
	kb := &inlineKeyboard{}
	var row []inlineButton
	for _, a := range e.Actions {
		label, err := buttonLabel(e, a)
		if err != nil {
			return nil, err
		}
		data := a + "|" + e.ID
		if len(data) > maxCallbackData {
			return nil, fmt.Errorf("button %s: action and event id are %d bytes, more than Telegram's %d (use a shorter event id)", a, len(data), maxCallbackData)
		}
		b := inlineButton{Text: label, CallbackData: data}
		if strings.HasPrefix(a, ActionOption) {
			kb.InlineKeyboard = append(kb.InlineKeyboard, []inlineButton{b})
		} else {
			row = append(row, b)
		}
	}
	if len(row) > 0 {
		kb.InlineKeyboard = append(kb.InlineKeyboard, row)
	}
	return kb, nil
}

func buttonLabel(e Event, action string) (string, error) {
	switch action {
	case ActionApprove:
		return "Approve", nil
	case ActionDeny:
		return "Deny", nil
	case ActionRestart:
		return "Restart", nil
	case ActionScreen:
		return "Show screen", nil
	}
	n, ok := optionNumber(action)
	if !ok {
		return "", fmt.Errorf("unknown action %q (approve, deny, option:N, restart or screen)", action)
	}
	if n > len(e.Options) {
		return "", fmt.Errorf("action %s: the event has %d options", action, len(e.Options))
	}
	return clip.Runes(strconv.Itoa(n)+". "+strings.TrimSpace(e.Options[n-1]), maxButtonText), nil
}

// optionNumber is N of "option:N" (1 to 99).
func optionNumber(action string) (int, bool) {
	s, ok := strings.CutPrefix(action, ActionOption)
	if !ok || s == "" || len(s) > 2 || s[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// validAction says whether a is an action a button may carry.
func validAction(a string) bool {
	switch a {
	case ActionApprove, ActionDeny, ActionRestart, ActionScreen:
		return true
	}
	_, ok := optionNumber(a)
	return ok
}

// newBot is a Bot API client for the sink (no getMe at start); its
// client reads at most limit of an answer.
func (x *Sender) newBot(s Sink, limit int64, poll time.Duration, opts ...bot.Option) (*bot.Bot, *recorder, error) {
	hc, rec := x.client(limit, poll+x.timeout())
	opts = append([]bot.Option{
		bot.WithServerURL(strings.TrimRight(s.URL, "/")),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(poll, hc),
		bot.WithErrorsHandler(func(error) {}),
	}, opts...)
	b, err := bot.New(s.Secret, opts...)
	return b, rec, err
}

// telegram sends the message, with the event's actions as buttons, to
// the sink's chat; the Result's body is {"message_id":N}.
func (x *Sender) telegram(ctx context.Context, s Sink, e Event) (Result, error) {
	kb, err := buttons(e)
	if err != nil {
		return Result{}, invalid{err}
	}
	chat, _ := strconv.ParseInt(s.Chat, 10, 64)
	b, rec, err := x.newBot(s, maxAnswer, time.Second)
	if err != nil {
		return Result{}, err
	}
	p := &bot.SendMessageParams{ChatID: chat, Text: telegramText(e), ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()}}
	if kb != nil {
		p.ReplyMarkup = kb
	}
	msg, err := b.SendMessage(ctx, p)
	res := rec.answer()
	if res.Status >= 300 {
		return res, &HTTPError{Status: res.Status, Body: res.Body}
	}
	if err != nil {
		return res, err
	}
	return Result{Status: res.Status, Body: fmt.Sprintf(`{"message_id":%d}`, msg.ID)}, nil
}

// Update is one thing a person did in a telegram sink's chat: pressed a
// button (Action, EventID, CallbackID) or wrote (Text, ReplyTo).
type Update struct {
	ID     int64  // the update's id: the offset to persist once handled
	Chat   string // the chat it came from (to check against the sink's)
	From   string // who: the username, else the user id
	FromID int64
	// Action and EventID are a pressed button's; Action is "" when its
	// data is not one this package wrote (forged, or from elsewhere).
	Action     string
	EventID    string
	Data       string // the pressed button's raw data
	CallbackID string // the press's id (answered with the reply)
	MessageID  int    // the message pressed or written
	Text       string // a free-text message
	// ReplyTo is the event id named by the message replied to (its
	// "ref <id>" line), "" when the text replies to none.
	ReplyTo string
}

// Listen long-polls the sink's bot for updates after offset (the last
// update id handled; 0 for none) until ctx ends, and calls handle with
// each, one at a time, in order. A press is answered with handle's reply
// (answerCallbackQuery), a message is replied to when the reply is not
// "". onErr (may be nil) is told each failed poll or answer, scrubbed of
// the token, an *HTTPError when the Bot API said no (401: a wrong
// token) — from more than one goroutine, so it must be safe for that;
// polling goes on, with a backoff, until ctx ends.
func (x *Sender) Listen(ctx context.Context, s Sink, offset int64, handle func(context.Context, Update) string, onErr func(error)) error {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Type != TypeTelegram {
		return fmt.Errorf("sink %s: only a telegram sink is listened to (it is %s)", s.Name, s.Type)
	}
	sc := scrubberFor(s)
	report := func(err error) {
		if onErr != nil && err != nil && !errors.Is(err, context.Canceled) {
			onErr(fmt.Errorf("telegram sink %s: %w", s.Name, sc.err(tgError(err))))
		}
	}
	poll := x.Poll
	if poll <= 0 {
		poll = defaultPoll
	}
	b, _, err := x.newBot(s, maxUpdates, poll,
		bot.WithInitialOffset(offset),
		bot.WithNotAsyncHandlers(),
		bot.WithAllowedUpdates(bot.AllowedUpdates{models.AllowedUpdateCallbackQuery, models.AllowedUpdateMessage}),
		bot.WithErrorsHandler(report),
		bot.WithDefaultHandler(func(ctx context.Context, b *bot.Bot, u *models.Update) {
			x.dispatch(ctx, b, u, handle, report)
		}),
	)
	if err != nil {
		return sc.err(err)
	}
	b.Start(ctx)
	return ctx.Err()
}

// dispatch hands one update to handle and answers it with the reply.
func (x *Sender) dispatch(ctx context.Context, b *bot.Bot, mu *models.Update, handle func(context.Context, Update) string, report func(error)) {
	u := toUpdate(mu)
	reply := handle(ctx, u)
	actx, cancel := context.WithTimeout(ctx, x.timeout())
	defer cancel()
	switch {
	case mu.CallbackQuery != nil:
		_, err := b.AnswerCallbackQuery(actx, &bot.AnswerCallbackQueryParams{
			CallbackQueryID: u.CallbackID, Text: clip.Runes(reply, maxCallbackText)})
		report(err)
	case mu.Message != nil && reply != "":
		_, err := b.SendMessage(actx, &bot.SendMessageParams{ChatID: mu.Message.Chat.ID, Text: reply,
			ReplyParameters: &models.ReplyParameters{MessageID: mu.Message.ID, AllowSendingWithoutReply: true}})
		report(err)
	}
}

// toUpdate reads a Bot API update: a press (its data parsed) or a text.
func toUpdate(mu *models.Update) Update {
	u := Update{ID: mu.ID}
	switch {
	case mu.CallbackQuery != nil:
		cq := mu.CallbackQuery
		u.CallbackID, u.Data = cq.ID, cq.Data
		u.From, u.FromID = userName(cq.From), cq.From.ID
		switch m := cq.Message; {
		case m.Message != nil:
			u.Chat, u.MessageID = strconv.FormatInt(m.Message.Chat.ID, 10), m.Message.ID
		case m.InaccessibleMessage != nil:
			u.Chat, u.MessageID = strconv.FormatInt(m.InaccessibleMessage.Chat.ID, 10), m.InaccessibleMessage.MessageID
		}
		u.Action, u.EventID = parseData(cq.Data)
	case mu.Message != nil:
		m := mu.Message
		u.Chat, u.MessageID, u.Text = strconv.FormatInt(m.Chat.ID, 10), m.ID, m.Text
		if m.From != nil {
			u.From, u.FromID = userName(*m.From), m.From.ID
		}
		if m.ReplyToMessage != nil {
			u.ReplyTo = RefOf(m.ReplyToMessage.Text)
		}
	}
	return u
}

func userName(u models.User) string {
	if u.Username != "" {
		return u.Username
	}
	return strconv.FormatInt(u.ID, 10)
}

// parseData reads "<action>|<event id>"; anything else is ("", "").
func parseData(data string) (action, id string) {
	a, id, ok := strings.Cut(data, "|")
	if !ok || !validAction(a) || id == "" || strings.ContainsAny(id, "| \t\r\n") {
		return "", ""
	}
	return a, id
}

// tgError is the Bot API's refusal as an *HTTPError (its error_code,
// which the library keeps only as one of its errors), else err.
func tgError(err error) error {
	for _, c := range []struct {
		target error
		status int
	}{
		{bot.ErrorUnauthorized, 401}, {bot.ErrorForbidden, 403}, {bot.ErrorBadRequest, 400},
		{bot.ErrorNotFound, 404}, {bot.ErrorConflict, 409},
	} {
		if errors.Is(err, c.target) {
			return &HTTPError{Status: c.status, Body: err.Error()}
		}
	}
	var tm *bot.TooManyRequestsError
	if errors.As(err, &tm) {
		return &HTTPError{Status: 429, Body: tm.Error()}
	}
	return err
}
