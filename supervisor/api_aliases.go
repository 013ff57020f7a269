package supervisor

import "github.com/cicy-ai/cicy-agent/api"

// The wire contract moved to package api; these names keep the
// supervisor's code as it was until its uses name package api.

type (
	CreateRequest   = api.CreateRequest
	CreateResponse  = api.CreateResponse
	Usage           = api.Usage
	PaneInfo        = api.PaneInfo
	SendRequest     = api.SendRequest
	SendResult      = api.SendResult
	ScreenResponse  = api.ScreenResponse
	Health          = api.Health
	StatusResponse  = api.StatusResponse
	GuidanceDoc     = api.GuidanceDoc
	HookRequest     = api.HookRequest
	HookResult      = api.HookResult
	Error           = api.Error
	TaskInfo        = api.TaskInfo
	DispatchRequest = api.DispatchRequest
	Event           = api.Event
	Snapshot        = api.Snapshot
	TaskSummary     = api.TaskSummary
	Explanation     = api.Explanation
	Signal          = api.Signal
	HookSeen        = api.HookSeen
	RulesVerdict    = api.RulesVerdict
	TurnSeen        = api.TurnSeen
	MemoryList      = api.MemoryList
	ReindexResult   = api.ReindexResult
	Client          = api.Client
	EventStream     = api.EventStream
	Attachment      = api.Attachment
)

const (
	KindUsage    = api.KindUsage
	KindNotFound = api.KindNotFound
	KindFailed   = api.KindFailed
	RecentTasks  = api.RecentTasks

	frameInput  = api.FrameInput
	frameResize = api.FrameResize
	upgradeName = api.AttachUpgrade
)

var (
	ErrNotRunning = api.ErrNotRunning
	NewClient     = api.NewClient
	ParsePaneID   = api.ParsePaneID
	CurrentTasks  = api.CurrentTasks
	TeamStatus    = api.TeamStatus

	readFrame = api.ReadFrame
)

// A client reaches a supervisor through its Home.
var _ api.Home = Home{}
