// ClientsCheck: test-only. The clients stage (scripts/clients.sh) compiles it with the generated
// Kotlin client and docs/CLIENTS.md's Android code, and runs it against a real popup-api +
// popup-worker: the guide's PopupService decides a popup with confirm=1, confirms its impression
// (twice: a retry counts once), records a click and posts a conversion worth 9.99, and the
// generated admin client reads them back in the experiment's results.
package popupsvc.clientscheck

import com.example.app.popup.PopupService
import java.util.UUID
import kotlin.system.exitProcess
import kotlinx.coroutines.runBlocking
import popupsvc.client.apis.AdminApi
import popupsvc.client.infrastructure.ApiClient
import popupsvc.client.models.ActionKind
import popupsvc.client.models.CreateIngestKeyRequest
import popupsvc.client.models.ExperimentInput
import popupsvc.client.models.GoalInput
import popupsvc.client.models.Platform
import popupsvc.client.models.PopupButton
import popupsvc.client.models.PopupInput
import popupsvc.client.models.Targeting
import popupsvc.client.models.VariantInput

fun main(): Unit = runBlocking {
    val api = env("POPUP_CLIENTS_API")
    ApiClient.accessToken = env("POPUP_CLIENTS_TOKEN")
    val admin = AdminApi(env("POPUP_CLIENTS_ADMIN"))
    val tag = UUID.randomUUID().toString().replace("-", "").take(10)
    val uid = "kt-$tag"

    val goal = admin.createGoal(GoalInput(name = "Purchase $tag", key = "kt-$tag", `value` = GoalInput.`Value`.SUM))
    val variants = listOf("a", "b").map { VariantInput(key = it, weight = 50, title = "Hello $it") }
    val created = admin.createPopup(PopupInput(
        name = "generated kotlin $tag", status = PopupInput.Status.ACTIVE, title = "Hello", content = "from the generated client",
        buttons = listOf(PopupButton(text = "Go"), PopupButton(text = "Later")),
        targeting = Targeting(platforms = listOf(Platform.ANDROID), regions = listOf("kt$tag")),
        experiment = ExperimentInput(variants = variants, primaryGoal = goal.key),
    ))
    admin.experimentStart(created.id)

    val popups = PopupService(api)
    val decision = popups.decide(uid, "8.10.0", region = "kt$tag") ?: fail("no popup for $uid")
    check(decision.popup?.id == created.id) { "decided ${decision.popup?.id}, created ${created.id}" }
    check(decision.variant == "a" || decision.variant == "b") { "variant ${decision.variant}" }
    // held for the user until confirmed: a second call shows nothing (two calls, one popup)
    check(popups.decide(uid, "8.10.0", region = "kt$tag") == null) { "a second popup while the first is held" }
    check(popups.shown(decision, uid)) { "impression refused" }
    check(popups.shown(decision, uid)) { "the impression's retry refused" }
    check(!popups.shown(decision.copy(decisionId = "kt-never-$tag"), uid)) { "a decision never made confirmed" }
    check(popups.decide(uid, "8.10.0", region = "kt$tag") == null) { "shown again within reshow_after_seconds" }
    check(popups.act(decision, uid, ActionKind.CLICK, button = 0)) { "click refused" }
    // a conversion's value is the app backend's to send, with an ingest key (docs/CONTRACT.md §14):
    // the generated client sends ApiClient.accessToken as the bearer of the conversion routes
    val adminToken = ApiClient.accessToken
    ApiClient.accessToken = admin.createIngestKey(CreateIngestKeyRequest(name = "kt-$tag")).key
    check(popups.convert(uid, goal.key, 9.99)) { "conversion refused" }
    ApiClient.accessToken = adminToken

    // the worker applies them within its flush interval: read the results until they show, 30 s at most
    val deadline = System.nanoTime() + 30_000_000_000L
    while (true) {
        val arm = admin.experimentResults(created.id).arms.single { it.key == decision.variant }
        val got = arm.goals.single { it.goal == goal.key }
        if (arm.exposures == 1L && arm.clicks == 1L && got.conversions == 1L && got.valueSum == 9.99) break
        if (System.nanoTime() > deadline) {
            fail("arm ${arm.key}: exposures ${arm.exposures}, clicks ${arm.clicks}, conversions ${got.conversions}, value_sum ${got.valueSum}")
        }
        Thread.sleep(200)
    }
    println("kotlin client: popup ${created.id} shown (confirmed once), clicked and converted (value 9.99) in arm ${decision.variant}")
}

private fun env(name: String): String = System.getenv(name) ?: fail("$name is not set")

private fun fail(message: String): Nothing {
    System.err.println("kotlin client: $message")
    exitProcess(1)
}
