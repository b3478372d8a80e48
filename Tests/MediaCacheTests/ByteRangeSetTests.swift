import MediaTestSupport
import Testing

@testable import MediaCache

@Suite struct ByteRangeSetTests {
    @Test func adjacentAndOverlappingInsertsMerge() {
        var set = ByteRangeSet()
        set.insert(10..<20)
        set.insert(20..<30)
        #expect(set.ranges == [10..<30])
        set.insert(40..<50)
        set.insert(25..<45)
        #expect(set.ranges == [10..<50])
        set.insert(0..<5)
        set.insert(60..<70)
        #expect(set.ranges == [0..<5, 10..<50, 60..<70])
        set.insert(3..<65)
        #expect(set.ranges == [0..<70])
        set.insert(5..<5)
        #expect(set.total == 70)
    }

    @Test func missingContainsAndPresent() {
        let set = ByteRangeSet([0..<10, 20..<30, 50..<60])
        #expect(set.missing(in: 0..<100) == [10..<20, 30..<50, 60..<100])
        #expect(set.missing(in: 5..<25) == [10..<20])
        #expect(set.missing(in: 20..<30).isEmpty)
        #expect(set.present(in: 5..<55) == [5..<10, 20..<30, 50..<55])
        #expect(set.contains(0..<10))
        #expect(!set.contains(0..<11))
        #expect(set.contains(9))
        #expect(!set.contains(10))
        #expect(set.contiguousLength(from: 22) == 8)
        #expect(set.contiguousLength(from: 30) == 0)
        #expect(set.pairs == [[0, 10], [20, 30], [50, 60]])
        #expect(set.description == "0-9,20-29,50-59")
    }

    @Test func removeAndClampSplitRanges() {
        var set = ByteRangeSet([0..<100])
        set.remove(10..<20)
        #expect(set.ranges == [0..<10, 20..<100])
        set.clamp(to: 50)
        #expect(set.ranges == [0..<10, 20..<50])
        set.clamp(to: 5)
        #expect(set.ranges == [0..<5])
    }

    /// Thousands of random operations, each checked against a bitmap model of the same bytes.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func matchesBitmapModel(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let size = 300
        var model = [Bool](repeating: false, count: size)
        var set = ByteRangeSet()
        for _ in 0..<2_000 {
            let a = Int.random(in: 0...size, using: &random)
            let b = Int.random(in: 0...size, using: &random)
            let range = Int64(min(a, b))..<Int64(max(a, b))
            let operation = Int.random(in: 0..<10, using: &random)
            if operation < 6 {
                set.insert(range)
                for i in range { model[Int(i)] = true }
            } else if operation < 8 {
                set.remove(range)
                for i in range { model[Int(i)] = false }
            } else {
                // Queries only.
                let expectedMissing = runs(of: false, in: model, within: range)
                #expect(set.missing(in: range) == expectedMissing)
                #expect(set.present(in: range) == runs(of: true, in: model, within: range))
                #expect(set.contains(range) == expectedMissing.isEmpty)
            }
            #expect(set.total == Int64(model.filter { $0 }.count))
            #expect(set.ranges == runs(of: true, in: model, within: 0..<Int64(size)))
            let probe = Int.random(in: 0..<size, using: &random)
            #expect(set.contains(Int64(probe)) == model[probe])
        }
    }

    private func runs(of value: Bool, in model: [Bool], within range: Range<Int64>) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var start: Int64?
        for i in range {
            if model[Int(i)] == value {
                if start == nil { start = i }
            } else if let s = start {
                result.append(s..<i)
                start = nil
            }
        }
        if let s = start { result.append(s..<range.upperBound) }
        return result
    }
}
